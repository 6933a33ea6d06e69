"""The recording proxy: the model API of Flint for any agent, each exchange written down.

Another agent than the article's speaks its own dialect of the model API, so it gets the forwarder's bounds (request
heads of HEAD_LIMIT and bodies of BODY_LIMIT bytes, MAX_CONNECTIONS at once, one request per connection, the answer's
timeout) but none of its checks of the article's chat body. It passes

    POST /v1/chat/completions (streamed or not)    POST /v1/responses    POST /v1/messages
    POST /v1/messages/count_tokens                 GET /v1/models        GET /props    GET /health

and answers everything else with 403 without contacting the server: /slots, /metrics (which the bench cross-checks
this log against) and the rest. Answers are relayed as they come, server-sent events included.

Every exchange is one JSON line of the log (`--log FILE`): when the request came (`t_sent`) and its answer ended
(`t`, seconds since the proxy started), the route, the request body, the status, whether the answer was streamed,
and the server's `usage`, `timings` and finish reason, read from the JSON answer or from the stream's final chunks
(bench/measure/proxy_log.py turns the log into the row's figures). A request still waiting for its answer when
its client left or the proxy was stopped (an agent killed mid-request) is written down too, as `in_flight`.

With `--max-steps N` it is also the bench's step limit (StepLimit): N requests with tools (the agent's main thread's and
its sub-agents') go on to the server, the next one and every model request after it are refused without reaching it, and
once no request is left with the server the log's last line says so (`{"stopped": "step_limit", ...}`), for the bench to
end the agent.

    python3 record_proxy.py --log /out/proxy.jsonl [--timeout S] [--max-steps N] 8080=172.18.0.1:41234

Standard library only: it runs beside forward.py, whose HTTP pieces it shares, in the sandbox image or on this host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from typing import IO, Any

from chat_body import Refused
from forward import (
    EXCHANGE_TIMEOUT_S,
    HEAD_LIMIT,
    Connections,
    Gate,
    body_length,
    read_head,
    relay,
    request_out,
)

ROUTES = frozenset(
    {
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/messages/count_tokens"),
        ("GET", "/v1/models"),
        ("GET", "/props"),
        ("GET", "/health"),
    }
)
MODEL_ROUTES = frozenset({"POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages"})
ANSWER_LIMIT = 16 * 1024 * 1024  # bytes of an answer kept to read its figures (a 2,000-token stream is about 1 MB)
RECORDED = ("usage", "timings")
END_EVENTS = ("response.completed", "message_stop")  # the types of the Responses' and the Messages' last events


def dechunk(data: bytes) -> bytes:
    """The body of a `Transfer-Encoding: chunked` answer (as far as it is complete)."""
    body, at = b"", 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return body
        size = int(data[at:line_end].split(b";")[0] or b"0", 16)
        if size == 0:
            return body
        body += data[line_end + 2 : line_end + 2 + size]
        at = line_end + 2 + size + 2


def _answer(head: bytes, raw: bytes) -> tuple[int, bool, bytes]:
    """An answer's status, whether it streams (server-sent events), and its body."""
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    body = dechunk(raw) if "chunked" in headers.get("transfer-encoding", "").lower() else raw
    return int(lines[0].split(" ")[1]), headers.get("content-type", "").startswith("text/event-stream"), body


def stream_ended(head: bytes, raw: bytes) -> bool:
    """Whether a stream's last event came (chat's [DONE], the Responses' response.completed, the Messages'
    message_stop): an agent may close its side right then (codex does), before the server ends the body."""
    streamed, body = _answer(head, raw)[1:]
    events = [line[5:].strip() for line in body.split(b"\n") if line.startswith(b"data:")] if streamed else []
    return any(event == b"[DONE]" or _json(event).get("type") in END_EVENTS for event in events)


def answer_figures(head: bytes, raw: bytes) -> dict[str, Any]:
    """What the log keeps of an answer: status, streamed, and the last usage, timings and finish reason it held."""
    status, streamed, body = _answer(head, raw)
    documents = [_json(line[5:]) for line in body.split(b"\n") if line.startswith(b"data:")] if streamed else []
    figures: dict[str, Any] = {"status": status, "streamed": streamed}
    for document in documents if streamed else [_json(body)]:
        _take(document, figures)
    if status >= 400 and not streamed:
        error = _json(body).get("error")
        figures["error"] = error if isinstance(error, dict) else {"message": body[:2000].decode("utf-8", "replace")}
    return figures


def _json(data: bytes) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError:
        return {}
    return document if isinstance(document, dict) else {}


def _take(document: dict[str, Any], figures: dict[str, Any]) -> None:
    """The figures a JSON answer or one stream chunk holds, over those of earlier chunks (the last ones count)."""
    for name in RECORDED:  # usage merged: a Messages stream sends input tokens first and output tokens last
        if isinstance(document.get(name), dict):
            figures[name] = {**figures.get(name, {}), **document[name]} if name == "usage" else document[name]
    choices = document.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict) and choices[0].get("finish_reason"):
        figures["finish_reason"] = choices[0]["finish_reason"]
    for holder in (document, document.get("delta"), document.get("message"), document.get("response")):
        if isinstance(holder, dict) and isinstance(holder.get("stop_reason") or holder.get("status"), str):
            figures["finish_reason"] = holder.get("stop_reason") or holder["status"]
        if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
            figures["usage"] = {**figures.get("usage", {}), **holder["usage"]}


def tool_names(request: Any) -> list[str] | None:
    """The names of the tools a request offers, sorted (each dialect's place for them), or None when it offers none:
    what tells the agent's main thread from its side requests (as bench/measure/request_threads.py tells them)."""
    tools = request.get("tools") if isinstance(request, dict) else None
    if not isinstance(tools, list) or not tools:
        return None
    names = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        named = function if isinstance(function, dict) else tool if isinstance(tool, dict) else {}
        names.append(str(named.get("name") or named.get("type") or ""))
    return sorted(names)


class StepLimit:
    """The bench's step limit, kept here where every request passes: at most `most` requests offering tools go on to the
    server, the agent's main thread's and its sub-agents' alike (a sub-agent's call is a step of the agent's work:
    Claude Code's looped on one call past its own --max-turns); the next one is refused, and so is every model request
    after it, without reaching the server. Side requests (no tools: titles, summaries) are not steps. An agent without
    tools (aider) has no steps by this measure and no limit here. Once the limit is reached and no request is left with
    the server, the log says so in one line: every prompt the server computed was answered, so its /metrics counts what
    the log holds when the bench ends the agent."""

    def __init__(self, most: int | None) -> None:
        self.most, self.taken = most, 0
        self.reached: str | None = None  # the route of the first request refused, once the limit is reached
        self.with_server: set[int] = set()  # the exchanges whose request went on to the server and is not done
        self.said = False

    def admit(self, route: str, request: Any) -> None:
        """Count a request about to go on; Refused once the limit is reached."""
        if self.most is None or route not in MODEL_ROUTES:
            return
        if self.reached is None and tool_names(request) is None:
            return  # a side request, before the limit: not a step
        if self.reached is None and self.taken < self.most:
            self.taken += 1
            return
        self.reached = self.reached or route
        message = f"the bench's step limit: {self.most} requests with tools (steps) were passed on"
        raise Refused(400, "Bad Request", message)

    def stop_line(self) -> dict[str, Any] | None:
        """The log's line that ends the run, once: the limit reached and nothing left with the server."""
        if self.reached is None or self.with_server or self.said:
            return None
        self.said = True
        return {"stopped": "step_limit", "max_steps": self.most, "refused": self.reached}


class RecordingGate(Gate):
    """One listening port: the routes of ROUTES to its server, each exchange written to `log`."""

    def __init__(self, host: str, port: int, timeout_s: float, log: IO[str], max_steps: int | None = None) -> None:
        super().__init__(host, port, None, timeout_s)
        self.log = log
        self.started = time.monotonic()
        self.pending: dict[int, dict[str, Any]] = {}  # each request being relayed (by its client): route and body
        self.limit = StepLimit(max_steps)

    async def read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        method, target, headers = await read_head(reader)
        path = target.split("?", 1)[0]
        if (method, path) not in ROUTES:
            raise Refused(403, "Forbidden", f"{method} {path} is not passed to the model server")
        body = await reader.readexactly(body_length(headers))
        request = _json(body) or body.decode("utf-8", "replace")
        self.limit.admit(f"{method} {path}", request)
        sent = round(time.monotonic() - self.started, 3)  # the answer's wait starts here, not at the agent's start
        self.pending[id(writer)] = {"t_sent": sent, "route": f"{method} {path}", "request": request}
        self.limit.with_server.add(id(writer))
        return request_out(method, target, headers, body)

    async def exchange(self, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        """Gate.exchange; then, with the limit reached and nothing left with the server, the log's stop line."""
        try:
            await super().exchange(client_reader, client)
        finally:
            self.limit.with_server.discard(id(client))
            self.pending.pop(id(client), None)
            if (line := self.limit.stop_line()) is not None:
                self.write({**line, "t": round(time.monotonic() - self.started, 3)})

    def write(self, entry: dict[str, Any]) -> None:
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    def record(self, request: dict[str, Any], head: bytes, raw: bytes, complete: bool) -> None:
        entry = {"t": round(time.monotonic() - self.started, 3), **request, **answer_figures(head, raw)}
        if not complete and not stream_ended(head, raw):
            entry["answer_cut"] = "the answer did not end (client gone, timeout, or over the proxy's limit)"
        self.write(entry)

    def record_unanswered(self, request: dict[str, Any]) -> None:
        """A request whose answer had not begun when its client left or the proxy stopped (an agent killed while it
        waited): llama-server then drops it, and its /metrics counted its prompt only if its prefill had ended."""
        entry = {"t": round(time.monotonic() - self.started, 3), **request, "status": None, "in_flight": True}
        entry["streamed"] = isinstance(request.get("request"), dict) and request["request"].get("stream") is True
        self.write(entry)

    async def relay(  # type: ignore[override]
        self,
        request: bytes,
        upstream_reader: asyncio.StreamReader,
        upstream: asyncio.StreamWriter,
        client: asyncio.StreamWriter,
        answered: list[bool],
    ) -> None:
        """forward.relay, keeping a copy of the answer (up to ANSWER_LIMIT) to record once it ends."""
        recorded = self.pending.pop(id(client), {})
        answer, complete, cancelled = CopiedAnswer(upstream_reader), False, False
        try:
            await relay(request, answer, upstream, client, answered)
            complete = len(answer.kept) < ANSWER_LIMIT
        except asyncio.CancelledError:  # the client left, or the proxy is stopping, before the answer ended
            cancelled = True
            raise
        finally:
            if answered:
                self.record(recorded, answer.head, answer.kept, complete)
            elif cancelled:  # no answer yet: the request is still written down, so the bench knows it was made
                self.record_unanswered(recorded)


class CopiedAnswer:
    """The server's answer as forward.relay reads it: its head, and a copy of its body up to ANSWER_LIMIT bytes."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader, self.head, self.kept = reader, b"", b""

    async def readuntil(self, separator: bytes) -> bytes:
        self.head = await self.reader.readuntil(separator)
        return self.head

    async def read(self, n: int) -> bytes:
        data = await self.reader.read(n)
        self.kept += data[: max(0, ANSWER_LIMIT - len(self.kept))]
        return data


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Pass an agent's model requests to llama-server, each one logged.")
    parser.add_argument("rule", metavar="[LISTEN_HOST:]PORT=TARGET_HOST:PORT")
    parser.add_argument("--log", required=True, help="the exchanges, one JSON line each")
    parser.add_argument("--timeout", type=float, default=EXCHANGE_TIMEOUT_S, help="seconds for one answer")
    parser.add_argument("--max-steps", type=int, help="requests with tools passed on, at most")
    return parser.parse_args(argv)


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    listen, target = args.rule.split("=", 1)
    listen_host, _, listen_port = listen.rpartition(":")
    host, port = target.rsplit(":", 1)
    with open(args.log, "a", encoding="utf-8") as log:
        gate = RecordingGate(host, int(port), args.timeout, log, args.max_steps)
        server = await asyncio.start_server(
            Connections().handler(gate), listen_host or "127.0.0.1", int(listen_port), limit=HEAD_LIMIT
        )
        bound = server.sockets[0].getsockname()
        print(f"recording {bound[0]}:{bound[1]} -> {host}:{port}", flush=True)
        await stopped.wait()
        server.close()
        await stop_exchanges()  # each one still relaying is written down before the log closes


async def stop_exchanges() -> None:
    """Cancel the exchanges in progress and wait for them to end (each records what it had)."""
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
