"""An HTTP filter between the sandboxes and the model servers: only the agent's own requests get through.

Sandbox containers sit on a Docker network with no route out. Between them and Flint and Jeff sits this forwarder,
in a container on both that network and one that reaches the servers. It passes

    POST /v1/chat/completions    GET /props    GET /health

(all the agent sends: agent/server.py) and answers everything else with 403 without contacting the server: /slots
(which makes the server write files of the caller's choosing), /metrics (which the bench cross-checks the trace
against), POST /props, and the rest. A chat body is parsed and passed only when it holds what the agent sends
(docker/chat_body.py), with the run's sampling settings (`--sampling PORT=JSON`: exactly those); anything else is
refused with 400.

Resources are bounded by construction: at most MAX_CONNECTIONS at once (more get 503 at once), request heads of
HEAD_LIMIT and bodies of BODY_LIMIT bytes (a larger Content-Length is refused before a byte of the body is read),
one body parsed at a time and only when it holds at most chat_body.MAX_BRACKETS arrays and objects, answers passed
through in 64 KiB pieces; so memory stays below MAX_CONNECTIONS x BODY_LIMIT plus one bounded parse (about 64 MB in
all). A request must arrive within REQUEST_TIMEOUT_S, and its answer within the exchange timeout (`--timeout`,
default EXCHANGE_TIMEOUT_S); when the time is up or the client goes away, the connection to the server is closed,
which makes llama-server drop the task and free its slot.

One request per connection: the request goes on with `Connection: close`, the response comes back byte for byte
(streamed or not) with its Connection header made `Connection: close`, then both connections close.

    python3 forward.py [--sampling 8080='{"temperature": 0}'] [--timeout S] 8080=172.18.0.1:41234 8081=...

Standard library only: it runs in the sandbox image, or in any image with python3, with chat_body.py beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

# Beside this file wherever it runs (the sandbox image's /opt/agentbench, compose.yaml's gates): the script's folder
# is first on sys.path.
from chat_body import Refused, check_chat

ALLOWED = frozenset({("POST", "/v1/chat/completions"), ("GET", "/props"), ("GET", "/health")})
HEAD_LIMIT = 64 * 1024  # bytes of request line and headers
BODY_LIMIT = 4 * 1024 * 1024  # bytes of a request body: a 128k-token window's conversation is about 1 MB of JSON
MAX_CONNECTIONS = 8  # at once, over every port: the agent has one request out to Flint and one to Jeff at most
REQUEST_TIMEOUT_S = 60  # to send a whole request
EXCHANGE_TIMEOUT_S = 900.0  # for the server's answer: the agent's own limit per request (agent --request-timeout)
WINDOW_TTL_S = 30.0  # how long the server's window, read from /props, is taken as known
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect"})


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


async def read_head(reader: asyncio.StreamReader) -> tuple[str, str, list[tuple[str, str]]]:
    """Method, target and headers of the next request; Refused when its head is over HEAD_LIMIT or malformed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise Refused(431, "Request Header Fields Too Large", "request head too large") from None
    return parse_head(head)


def body_length(headers: list[tuple[str, str]]) -> int:
    """The request body's length; Refused when it is chunked, its Content-Length unclear, or over BODY_LIMIT."""
    names = [name.lower() for name, _ in headers]
    if "transfer-encoding" in names:
        raise Refused(411, "Length Required", "request bodies must have a Content-Length")
    lengths = {value for name, value in headers if name.lower() == "content-length"}
    if len(lengths) > 1 or not all(value.isdigit() for value in lengths):
        raise Refused(400, "Bad Request", "conflicting or malformed Content-Length")
    length = int(lengths.pop()) if lengths else 0
    if length > BODY_LIMIT:
        raise Refused(413, "Content Too Large", f"request body over {BODY_LIMIT} bytes")
    return length


def request_out(method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """The request as it goes on: hop-by-hop headers dropped, its own length, and `Connection: close`."""
    kept = "".join(f"{n}: {v}\r\n" for n, v in headers if n.lower() not in HOP_BY_HOP | {"content-length"})
    head_out = f"{method} {target} HTTP/1.1\r\n{kept}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head_out.encode("latin-1") + body


class Gate:
    """One listening port: its target server, the run's sampling settings, the server's window once read."""

    def __init__(self, host: str, port: int, sampling: dict[str, Any] | None, timeout_s: float) -> None:
        self.host, self.port, self.sampling, self.timeout_s = host, port, sampling, timeout_s
        self.window: tuple[float, int | None] = (0.0, None)  # when read, and the server's n_ctx

    async def server_window(self) -> int | None:
        """The server's window (GET /props), read at most every WINDOW_TTL_S; None when it does not say."""
        read_at, window = self.window
        if window is not None and time.monotonic() - read_at < WINDOW_TTL_S:
            return window
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 5)
            writer.write(b"GET /props HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while len(answer) <= HEAD_LIMIT and (chunk := await asyncio.wait_for(reader.read(65536), 10)):
                answer += chunk
            writer.close()
            props = json.loads(answer.partition(b"\r\n\r\n")[2])
            window = int(props["default_generation_settings"]["n_ctx"])
        except (OSError, ValueError, KeyError, TypeError, asyncio.TimeoutError):
            window = None
        self.window = (time.monotonic(), window)
        return window

    async def read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        """The request to send upstream; Refused when it is malformed, not on the allowed list, or not the
        agent's."""
        method, target, headers = await read_head(reader)
        path = target.split("?", 1)[0]
        if (method, path) not in ALLOWED:
            raise Refused(403, "Forbidden", f"{method} {path} is not forwarded to the model server")
        if "?" in target:
            raise Refused(403, "Forbidden", "query strings are not forwarded to the model server")
        length = body_length(headers)
        if method == "GET" and length:
            raise Refused(400, "Bad Request", "a GET request has no body")
        if any(name.lower() == "expect" and "100-continue" in value.lower() for name, value in headers):
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await reader.readexactly(length)
        if method == "POST":
            window = await self.server_window() if b'"max_tokens"' in body else None
            body = json.dumps(check_chat(body, self.sampling, window)).encode()
        return request_out(method, path, headers, body)

    async def exchange(self, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(self.read_request(client_reader, client), REQUEST_TIMEOUT_S)
        except Refused as e:
            client.write(error_response(e.status, e.reason, str(e)))
            return
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
            return  # the client went away or stalled: nothing to answer
        try:
            upstream_reader, upstream = await asyncio.open_connection(self.host, self.port, limit=HEAD_LIMIT)
        except OSError as e:
            client.write(error_response(502, "Bad Gateway", f"the model server cannot be reached: {e}"))
            return
        answered: list[bool] = []  # set once the server's answer began: a 504 can no longer be sent then
        answer = asyncio.ensure_future(self.relay(request, upstream_reader, upstream, client, answered))
        gone = asyncio.ensure_future(client_reader.read(1))  # the client sends nothing more: EOF means it left
        try:
            done, _ = await asyncio.wait({answer, gone}, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
            if not done and not answered:
                client.write(error_response(504, "Gateway Timeout", f"no answer within {self.timeout_s:g} s"))
        finally:
            for task in (answer, gone):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            upstream.close()  # llama-server sees the connection close and drops the task

    async def relay(self, *args: Any) -> None:
        """The request on, the answer back (docker/record_proxy.py's gate keeps a copy of it too)."""
        await relay(*args)


class AnswerReader(Protocol):
    """What relay reads the server's answer from: a StreamReader, or the recording proxy's copying one."""

    async def readuntil(self, separator: bytes) -> bytes: ...

    async def read(self, n: int) -> bytes: ...


async def relay(
    request: bytes,
    upstream_reader: AnswerReader,
    upstream: asyncio.StreamWriter,
    client: asyncio.StreamWriter,
    answered: list[bool],
) -> None:
    """The request to the server, and its answer back to the client as it comes."""
    upstream.write(request)
    await upstream.drain()
    try:
        head = await upstream_reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        client.write(error_response(502, "Bad Gateway", "the model server sent no HTTP response"))
        return
    answered.append(True)
    client.write(close_after(head))
    while data := await upstream_reader.read(65536):
        client.write(data)
        await client.drain()


def close_after(response_head: bytes) -> bytes:
    """The upstream response head with its Connection header replaced by `Connection: close`."""
    lines = response_head.decode("latin-1").removesuffix("\r\n\r\n").split("\r\n")
    kept = [line for line in lines if line.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
    return ("\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1")


class Connections:
    """How many connections are open across every port; past MAX_CONNECTIONS a new one gets 503 and is closed."""

    def __init__(self, limit: int = MAX_CONNECTIONS) -> None:
        self.limit, self.open = limit, 0

    def handler(self, gate: Gate) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.open += 1
            try:
                if self.open > self.limit:
                    writer.write(error_response(503, "Service Unavailable", f"over {self.limit} connections at once"))
                else:
                    await gate.exchange(reader, writer)
                await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                self.open -= 1
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

        return handle


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Pass only the agent's requests on to llama-servers.")
    parser.add_argument("rules", nargs="+", metavar="[LISTEN_HOST:]PORT=TARGET_HOST:PORT")
    parser.add_argument(
        "--sampling",
        action="append",
        default=[],
        metavar="PORT=JSON",
        help="the run's sampling settings for the server behind PORT: exactly these pass",
    )
    parser.add_argument("--timeout", type=float, default=EXCHANGE_TIMEOUT_S, help="seconds for one answer")
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sampling = {port: json.loads(text) for port, _, text in (item.partition("=") for item in args.sampling)}
    connections = Connections()
    # As a container's PID 1 a signal without a handler is ignored, so `docker stop` (compose down, make down) would
    # wait its 10 s grace and kill the gate: a SIGTERM ends it at once.
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    servers = []
    for rule in args.rules:
        listen, target = rule.split("=", 1)
        listen_host, _, listen_port = listen.rpartition(":")
        host, port = target.rsplit(":", 1)
        gate = Gate(host, int(port), sampling.get(listen_port), args.timeout)
        server = await asyncio.start_server(
            connections.handler(gate), listen_host or "0.0.0.0", int(listen_port), limit=HEAD_LIMIT
        )
        bound = server.sockets[0].getsockname()
        print(f"forwarding {bound[0]}:{bound[1]} -> {host}:{port} (chat, props and health only)", flush=True)
        servers.append(server)
    await stopped.wait()  # the servers serve from asyncio.start_server on
    for server in servers:
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
