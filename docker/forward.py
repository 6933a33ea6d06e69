"""A TCP forwarder for sandboxes on an internal network.

Sandbox containers sit on a Docker network with no route out. When Flint and Jeff run as host processes (the
embedded CPU servers), this forwarder joins both that network and a bridge network, and passes connections on:

    python3 forward.py 8080=172.18.0.1:41234 8081=172.18.0.1:41235
"""

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def handler(host: str, port: int):
    async def handle(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    return handle


async def main(rules: list[str]) -> None:
    servers = []
    for rule in rules:
        listen, target = rule.split("=", 1)
        host, port = target.rsplit(":", 1)
        servers.append(await asyncio.start_server(handler(host, int(port)), "0.0.0.0", int(listen)))
        print(f"forwarding :{listen} -> {host}:{port}", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
