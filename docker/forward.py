"""An HTTP filter between the sandboxes and the model servers: only what the agent needs gets through.

Sandbox containers sit on a Docker network with no route out. Between them and Flint and Jeff sits this forwarder,
in a container on both that network and one that reaches the servers. It passes

    POST /v1/chat/completions    GET /props    GET /health

(all the agent sends: agent/server.py) and answers everything else with 403 without contacting the server: /slots
(which makes the server write files of the caller's choosing), /metrics (which the bench cross-checks the trace
against), POST /props, and the rest.

One request per connection: the request goes on with `Connection: close`, the response comes back byte for byte
(streamed or not) with its Connection header made `Connection: close`, then both connections close.

    python3 forward.py 8080=172.18.0.1:41234 8081=172.18.0.1:41235    [LISTEN_HOST:]PORT=TARGET_HOST:PORT ...

Standard library only: it runs in the sandbox image, or in any image with python3.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

ALLOWED = frozenset({("POST", "/v1/chat/completions"), ("GET", "/props"), ("GET", "/health")})
HEAD_LIMIT = 64 * 1024  # bytes of request line and headers
BODY_LIMIT = 64 * 1024 * 1024  # bytes of request body (a chat request with a 128k-token window is a few MB)
REQUEST_TIMEOUT_S = 60  # to send a whole request; the answer may take as long as the server needs
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect"})


class Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


def error_response(status: int, reason: str, message: str) -> bytes:
    """An error in llama-server's own shape, so the agent reads it like any other server error."""
    body = json.dumps({"error": {"code": status, "message": message, "type": "forbidden"}}).encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body


def parse_head(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    """Method, target and headers of a request head; Refused(400) when it is not plain HTTP/1.x."""
    lines = head.decode("latin-1").removesuffix("\r\n\r\n").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
        raise Refused(400, "Bad Request", "not an HTTP/1.x request with a path")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip() or line[0] in " \t":
            raise Refused(400, "Bad Request", "malformed header line")
        headers.append((name, value.strip()))
    return parts[0], parts[1], headers


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """The request to send upstream; Refused when it is malformed or not on the allowed list."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise Refused(431, "Request Header Fields Too Large", "request head too large") from None
    method, target, headers = parse_head(head)
    if (method, target.split("?", 1)[0]) not in ALLOWED:
        raise Refused(403, "Forbidden", f"{method} {target.split('?', 1)[0]} is not forwarded to the model server")
    names = [name.lower() for name, _ in headers]
    if "transfer-encoding" in names:
        raise Refused(411, "Length Required", "request bodies must have a Content-Length")
    lengths = {value for name, value in headers if name.lower() == "content-length"}
    if len(lengths) > 1 or not all(value.isdigit() for value in lengths):
        raise Refused(400, "Bad Request", "conflicting or malformed Content-Length")
    length = int(lengths.pop()) if lengths else 0
    if length > BODY_LIMIT:
        raise Refused(413, "Content Too Large", f"request body over {BODY_LIMIT} bytes")
    if any(name.lower() == "expect" and "100-continue" in value.lower() for name, value in headers):
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = await reader.readexactly(length)
    kept = "".join(f"{name}: {value}\r\n" for name, value in headers if name.lower() not in HOP_BY_HOP)
    return f"{method} {target} HTTP/1.1\r\n{kept}Connection: close\r\n\r\n".encode("latin-1") + body


def close_after(response_head: bytes) -> bytes:
    """The upstream response head with its Connection header replaced by `Connection: close`."""
    lines = response_head.decode("latin-1").removesuffix("\r\n\r\n").split("\r\n")
    kept = [line for line in lines if line.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
    return ("\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1")


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()


async def exchange(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter, host: str, port: int) -> None:
    try:
        request = await asyncio.wait_for(read_request(client_reader, client), REQUEST_TIMEOUT_S)
    except Refused as e:
        client.write(error_response(e.status, e.reason, str(e)))
        return
    except (asyncio.IncompleteReadError, asyncio.TimeoutError):
        return  # the client went away or stalled: nothing to answer
    try:
        upstream_reader, upstream = await asyncio.open_connection(host, port, limit=HEAD_LIMIT)
    except OSError as e:
        client.write(error_response(502, "Bad Gateway", f"the model server cannot be reached: {e}"))
        return
    try:
        upstream.write(request)
        await upstream.drain()
        try:
            head = await upstream_reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            client.write(error_response(502, "Bad Gateway", "the model server sent no HTTP response"))
            return
        client.write(close_after(head))
        await pipe(upstream_reader, client)
    finally:
        upstream.close()


def handler(host: str, port: int):  # type: ignore[no-untyped-def]
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await exchange(reader, writer, host, port)
            await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    return handle


async def main(rules: list[str]) -> None:
    servers = []
    for rule in rules:
        listen, target = rule.split("=", 1)
        listen_host, _, listen_port = listen.rpartition(":")
        host, port = target.rsplit(":", 1)
        server = await asyncio.start_server(
            handler(host, int(port)), listen_host or "0.0.0.0", int(listen_port), limit=HEAD_LIMIT
        )
        bound = server.sockets[0].getsockname()
        print(f"forwarding {bound[0]}:{bound[1]} -> {host}:{port} (chat, props and health only)", flush=True)
        servers.append(server)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
