"""An HTTP filter between the sandboxes and the model servers: only the agent's own requests get through.

Sandbox containers sit on a Docker network with no route out. Between them and Flint and Jeff sits this forwarder,
in a container on both that network and one that reaches the servers. It passes

    POST /v1/chat/completions    GET /props    GET /health

(all the agent sends: agent/server.py) and answers everything else with 403 without contacting the server: /slots
(which makes the server write files of the caller's choosing), /metrics (which the bench cross-checks the trace
against), POST /props, and the rest. A chat body is parsed and passed only when it holds what the agent sends:
`messages` (system, user, assistant and tool turns of text and tool calls), `tools` (a few small function
schemas), `tool_choice`, `stream: false`, `max_tokens` up to the server's window, and the run's sampling settings
(`--sampling PORT=JSON`: exactly those; without it, the usual numeric ones). A grammar, `n_probs`, a JSON schema or
any other field is refused with 400, which the agent reports as the server's refusal.

Resources are bounded by construction: at most MAX_CONNECTIONS at once (more get 503 at once), request heads of
HEAD_LIMIT and bodies of BODY_LIMIT bytes (a larger Content-Length is refused before a byte of the body is read),
one body parsed at a time and only when it holds at most MAX_BRACKETS arrays and objects, answers passed through in
64 KiB pieces; so memory stays below MAX_CONNECTIONS x BODY_LIMIT plus one bounded parse (about 64 MB in all). A request must arrive within REQUEST_TIMEOUT_S, and its answer within the exchange
timeout (`--timeout`, default EXCHANGE_TIMEOUT_S); when the time is up or the client goes away, the connection to
the server is closed, which makes llama-server drop the task and free its slot.

One request per connection: the request goes on with `Connection: close`, the response comes back byte for byte
(streamed or not) with its Connection header made `Connection: close`, then both connections close.

    python3 forward.py [--sampling 8080='{"temperature": 0}'] [--timeout S] 8080=172.18.0.1:41234 8081=...

Standard library only: it runs in the sandbox image, or in any image with python3.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

ALLOWED = frozenset({("POST", "/v1/chat/completions"), ("GET", "/props"), ("GET", "/health")})
HEAD_LIMIT = 64 * 1024  # bytes of request line and headers
BODY_LIMIT = 4 * 1024 * 1024  # bytes of a request body: a 128k-token window's conversation is about 1 MB of JSON
MAX_CONNECTIONS = 8  # at once, over every port: the agent has one request out to Flint and one to Jeff at most
REQUEST_TIMEOUT_S = 60  # to send a whole request
EXCHANGE_TIMEOUT_S = 900.0  # for the server's answer: the agent's own limit per request (agent --request-timeout)
WINDOW_TTL_S = 30.0  # how long the server's window, read from /props, is taken as known
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect"})

# What a chat body may hold: agent/loop.py's request_body and agent/jeff.py's opinion request.
CHAT_FIELDS = frozenset({"messages", "tools", "tool_choice", "stream", "max_tokens"})
MESSAGE_FIELDS = frozenset({"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"})
ROLES = frozenset({"system", "user", "assistant", "tool"})
MAX_MESSAGES = 4096
# Arrays and objects in one body, counted as brackets before parsing: what a parse can build is bounded by this (a
# body of empty lists would otherwise cost some 30 bytes of memory per byte), not by the body's length alone.
MAX_BRACKETS = 256 * 1024
MAX_TOOLS = 16
TOOLS_LIMIT = 32 * 1024  # bytes of the tools' JSON: the agent's six are about 1.5 KB
SCHEMA_DEPTH = 8
# Sampling settings taken when no --sampling names the run's: numbers in the ranges llama-server accepts.
DEFAULT_SAMPLING = {"temperature": (0, 5), "top_p": (0, 1), "min_p": (0, 1), "top_k": (0, 1000), "seed": (-1, 2**32)}


class Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


def bad(message: str) -> Refused:
    return Refused(400, "Bad Request", f"the forwarder passes only the agent's own requests: {message}")


def error_response(status: int, reason: str, message: str) -> bytes:
    """An error in llama-server's own shape, so the agent reads it like any other server error."""
    body = json.dumps({"error": {"code": status, "message": message, "type": "forbidden"}}).encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "Connection: close\r\n\r\n").encode() + body


def _depth(value: Any, limit: int) -> bool:
    """Whether `value` nests at most `limit` levels."""
    if limit < 0:
        return False
    if isinstance(value, dict):
        return all(_depth(v, limit - 1) for v in value.values())
    if isinstance(value, list):
        return all(_depth(v, limit - 1) for v in value)
    return True


def check_message(message: Any) -> None:
    if not isinstance(message, dict) or not set(message) <= MESSAGE_FIELDS or message.get("role") not in ROLES:
        raise bad("each message is an object with a role and text (or tool calls)")
    for key in ("content", "reasoning_content", "tool_call_id", "name"):
        if not isinstance(message.get(key, ""), str | type(None)):
            raise bad(f"a message's {key} must be text")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not (
            isinstance(function, dict)
            and set(call) <= {"id", "type", "function"}
            and set(function) <= {"name", "arguments"}
            and all(isinstance(v, str) for v in (*function.values(), call.get("id", ""), call.get("type", "")))
        ):
            raise bad("a tool call is an id, a type and a function's name and arguments, as text")


def check_tools(tools: Any) -> None:
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS or len(json.dumps(tools)) > TOOLS_LIMIT:
        raise bad(f"tools is a list of at most {MAX_TOOLS} functions in {TOOLS_LIMIT} bytes")
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (
            isinstance(function, dict)
            and tool.get("type") == "function"
            and set(function) <= {"name", "description", "parameters"}
            and _depth(function.get("parameters", {}), SCHEMA_DEPTH)
        ):
            raise bad("each tool is a function with a name, a description and a small parameters schema")


def check_sampling(body: dict[str, Any], sampling: dict[str, Any] | None) -> None:
    extra = set(body) - CHAT_FIELDS
    if sampling is not None:
        if extra - set(sampling) or any(body[key] != sampling[key] for key in extra):
            raise bad(f"the run's sampling settings are {json.dumps(sampling, sort_keys=True)}; got others")
        return
    for key in sorted(extra):
        if key not in DEFAULT_SAMPLING:
            raise bad(f"{key!r} is not a field the agent sends")
        low, high = DEFAULT_SAMPLING[key]
        value = body[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise bad(f"{key} must be a number")
        if not low <= value <= high:
            raise bad(f"{key} must be between {low} and {high}")


def check_chat(raw: bytes, sampling: dict[str, Any] | None, window: int | None) -> dict[str, Any]:
    """The chat body, when it is one the agent sends; Refused(400) naming what is not. `window` bounds max_tokens
    (None: not known, so max_tokens is refused)."""
    if raw.count(b"[") + raw.count(b"{") > MAX_BRACKETS:
        raise bad(f"the body holds more than {MAX_BRACKETS} arrays and objects")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise bad("the body is not JSON") from None
    if not isinstance(body, dict):
        raise bad("the body is not a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not 1 <= len(messages) <= MAX_MESSAGES:
        raise bad(f"messages is a list of 1 to {MAX_MESSAGES} messages")
    for message in messages:
        check_message(message)
    if "tools" in body:
        check_tools(body["tools"])
    choice = body.get("tool_choice", "auto")
    if choice not in ("auto", "none", "required") and not (isinstance(choice, dict) and _depth(choice, 2)):
        raise bad("tool_choice is auto, none, required or a named function")
    if body.get("stream", False) is not False:
        raise bad("stream must be false")
    check_sampling(body, sampling)
    if "max_tokens" in body:
        tokens = body["max_tokens"]
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= (window or 0):
            raise bad(f"max_tokens must be a whole number from 1 to the window ({window or 'unknown'} tokens)")
    return body


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
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise Refused(431, "Request Header Fields Too Large", "request head too large") from None
        method, target, headers = parse_head(head)
        path = target.split("?", 1)[0]
        if (method, path) not in ALLOWED:
            raise Refused(403, "Forbidden", f"{method} {path} is not forwarded to the model server")
        if "?" in target:
            raise Refused(403, "Forbidden", "query strings are not forwarded to the model server")
        names = [name.lower() for name, _ in headers]
        if "transfer-encoding" in names:
            raise Refused(411, "Length Required", "request bodies must have a Content-Length")
        lengths = {value for name, value in headers if name.lower() == "content-length"}
        if len(lengths) > 1 or not all(value.isdigit() for value in lengths):
            raise Refused(400, "Bad Request", "conflicting or malformed Content-Length")
        length = int(lengths.pop()) if lengths else 0
        if length > BODY_LIMIT:
            raise Refused(413, "Content Too Large", f"request body over {BODY_LIMIT} bytes")
        if method == "GET" and length:
            raise Refused(400, "Bad Request", "a GET request has no body")
        if any(name.lower() == "expect" and "100-continue" in value.lower() for name, value in headers):
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await reader.readexactly(length)
        if method == "POST":
            window = await self.server_window() if b'"max_tokens"' in body else None
            body = json.dumps(check_chat(body, self.sampling, window)).encode()
        kept = "".join(
            f"{name}: {value}\r\n" for name, value in headers if name.lower() not in HOP_BY_HOP | {"content-length"}
        )
        head_out = f"{method} {path} HTTP/1.1\r\n{kept}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        return head_out.encode("latin-1") + body

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
        answer = asyncio.ensure_future(relay(request, upstream_reader, upstream, client, answered))
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


async def relay(
    request: bytes,
    upstream_reader: asyncio.StreamReader,
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
    parser.add_argument("--sampling", action="append", default=[], metavar="PORT=JSON",
                        help="the run's sampling settings for the server behind PORT: exactly these pass")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=EXCHANGE_TIMEOUT_S, help="seconds for one answer")
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sampling = {port: json.loads(text) for port, _, text in (item.partition("=") for item in args.sampling)}
    connections = Connections()
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
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())
