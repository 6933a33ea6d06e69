"""A scripted llama-server double: answers from a queue with the exact shapes of the real server.

In a test:

    with FakeLlama([fake_llama.tool_call("read_file", {"path": "todo.py"}), fake_llama.prose("Done.")]) as flint:
        ...  # point the agent at flint.url; afterwards flint.requests holds every chat request body

As a separate process (for tests that need an external server):

    python -m bench.testing.fake_llama --port 8081 --script replies.json [--record requests.jsonl]

where replies.json is {"replies": [...], "n_ctx": 4096, ...} with the same dicts the helpers below build.

What it models (shapes measured on the pinned llama-server build):
- /health, /props (n_ctx, build_info, model_path, chat_template_caps), /metrics (Prometheus text; 501 when off),
  POST /slots/0?action=erase (empties the prompt cache; 501 when slot saving is off).
- /v1/chat/completions: `usage` with prompt_tokens_details.cached_tokens, and `timings` with cache_n + prompt_n =
  prompt_tokens. A prompt is one token per CHARS_PER_TOKEN characters of a fixed rendering of the messages and
  tools; the prompt cache is the longest common prefix with the previous prompt plus its answer, and at least one
  token is always processed, as on the real server. So clearing early messages shows up as a larger prompt_n.
- A prompt of n_ctx tokens or more gets the 400 exceed_context_size_error without using up a scripted reply.
- A length cut ends at the window: prompt_tokens + completion_tokens = n_ctx.
- /metrics counters add up what was served: prompt_tokens_total is the sum of timings.prompt_n (a 500 parse
  failure counts too, as on the real server: the prompt was processed before the answer failed to parse).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHARS_PER_TOKEN = 4
Reply = dict[str, Any]
OLD_PARSE_MESSAGE = 'Failed to parse input at pos 131: <tool_call>\n{"name": "write_file", "arguments": {"pa'
NEW_PARSE_MESSAGE = "The model produced output that does not match the expected peg-native format"


# Scripted replies: plain dicts, so a JSON script file can hold them too. Each may carry "delay" (seconds), and
# "usage" or "timings" to send in place of the computed ones (a server that reports nonsense).


def tool_calls(
    calls: Iterable[tuple[str, dict[str, Any] | str]], *, content: str = "", reasoning: str | None = None
) -> Reply:
    """An answer calling tools; arguments given as a string are sent as they are (for malformed JSON)."""
    return {"kind": "answer", "content": content, "reasoning": reasoning, "tool_calls": [list(c) for c in calls]}


def tool_call(name: str, args: dict[str, Any] | str, *, content: str = "", reasoning: str | None = None) -> Reply:
    return tool_calls([(name, args)], content=content, reasoning=reasoning)


def prose(text: str, *, reasoning: str | None = None) -> Reply:
    return {"kind": "answer", "content": text, "reasoning": reasoning, "tool_calls": []}


def length_cut(
    text: str = "Let me think about how to change",
    *,
    reasoning: str | None = None,
    calls: Iterable[tuple[str, dict[str, Any] | str]] = (),
    completion_tokens: int | None = None,
) -> Reply:
    """An answer stopped by the window (or by max_tokens, when completion_tokens is given): finish_reason length."""
    return {
        "kind": "answer",
        "content": text,
        "reasoning": reasoning,
        "tool_calls": [list(c) for c in calls],
        "finish_reason": "length",
        "completion_tokens": completion_tokens,
    }


def context_error() -> Reply:
    """HTTP 400 exceed_context_size_error, whatever the prompt's size."""
    return {"kind": "context_error"}


def parse_failure(*, old: bool = False, message: str | None = None) -> Reply:
    """HTTP 500: the answer was generated but the server could not parse it (older or newer message, or `message`).
    The prompt was processed first, so the cache and the counters move as for an answer."""
    text = message or (OLD_PARSE_MESSAGE if old else NEW_PARSE_MESSAGE)
    return {**http_error(500, "server_error", text), "processed": True}


def http_error(status: int, type_: str, message: str) -> Reply:
    return {"kind": "error", "status": status, "type": type_, "message": message}


def raw(body: dict[str, Any], status: int = 200) -> Reply:
    """A body exactly as given (one captured from the real server); its timings go into /metrics."""
    return {"kind": "raw", "status": status, "body": body}


def raw_text(text: str, status: int = 200) -> Reply:
    """A body of exactly this text: not JSON, or JSON no dict can build (nested thousands deep, a lone surrogate)."""
    return {"kind": "raw_text", "status": status, "text": text}


def loading() -> Reply:
    return http_error(503, "unavailable_error", "Loading model")


def non_json() -> Reply:
    return {"kind": "non_json"}


def truncated_body() -> Reply:
    """A 200 whose body stops halfway through (Content-Length promises more)."""
    return {"kind": "truncated"}


def drop_connection() -> Reply:
    """Close the connection without answering."""
    return {"kind": "drop"}


def die() -> Reply:
    """Close the connection without answering, then stop serving: later connections are refused."""
    return {"kind": "die"}


def hang() -> Reply:
    """Never answer this request (until the double stops), while /health and /metrics go on answering: a server
    whose slot is stuck."""
    return {"kind": "hang"}


class FakeLlama:
    """The double; see the module docstring.

    .url        base URL to give a client
    .requests   every chat request body received, in order (also those answered with an error)
    .responses  every chat completion served with HTTP 200, in order
    .hits       (method, path) of every request
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        n_ctx: int = 4096,
        default: Reply | None = None,
        build_info: str = "b11434-fake",
        model_path: str = "/models/fake-flint.gguf",
        supports_tool_calls: bool = True,
        metrics: bool = True,
        slot_save: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        record: Path | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.default = default or prose("I have finished the task.")
        self.n_ctx = n_ctx
        self.build_info = build_info
        self.model_path = model_path
        self.supports_tool_calls = supports_tool_calls
        self.metrics_enabled = metrics
        self.slot_save = slot_save  # started with --slot-save-path: POST /slots/0?action=erase works
        self.record = record
        self.requests: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # every 200 chat completion served, in order
        self.hits: list[tuple[str, str]] = []
        self.counters = dict.fromkeys(COUNTERS, 0.0)
        self.cached_text = ""  # what the slot holds: the last prompt and its answer, rendered
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), _Handler)
        self.server.daemon_threads = True
        self.server.fake = self  # type: ignore[attr-defined]
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()  # hung requests end when the double stops

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}"

    def add(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def start(self) -> FakeLlama:
        # A short poll interval, so that stopping takes milliseconds rather than half a second.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), name="fake-llama", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.server.shutdown()
            self.thread = None
        self.server.server_close()

    def __enter__(self) -> FakeLlama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # What the endpoints answer

    def props(self) -> dict[str, Any]:
        return {
            "default_generation_settings": {"params": {"temperature": 0.8, "n_predict": -1}, "n_ctx": self.n_ctx},
            "total_slots": 1,
            "model_alias": Path(self.model_path).name,
            "model_path": self.model_path,
            "modalities": {"vision": False, "video": False, "audio": False},
            "chat_template": "{{ messages }}",
            "chat_template_caps": {"supports_tool_calls": self.supports_tool_calls, "supports_system_role": True},
            "bos_token": "<|im_start|>",
            "eos_token": "<|im_end|>",
            "build_info": self.build_info,
            "is_sleeping": False,
        }

    def metrics_text(self) -> str:
        lines = []
        for name, kind in COUNTERS.items():
            lines += [f"# HELP llamacpp:{name} {name}", f"# TYPE llamacpp:{name} {kind}"]
            lines.append(f"llamacpp:{name} {self.counters[name]:g}")
        return "\n".join(lines) + "\n"

    def next_reply(self, body: dict[str, Any]) -> tuple[Reply, int]:
        """The reply for this request and the prompt size; an oversized prompt is refused without using the queue."""
        with self.lock:
            self.requests.append(body)
            if self.record is not None:
                with open(self.record, "a", encoding="utf-8") as f:
                    f.write(json.dumps(body) + "\n")
            prompt_tokens = count_tokens(render_prompt(body))
            if prompt_tokens >= self.n_ctx:
                return context_error(), prompt_tokens
            return (self.replies.popleft() if self.replies else self.default), prompt_tokens

    def answer(self, reply: Reply, body: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
        """A chat completion for a scripted answer, with usage and timings from the prompt-cache model."""
        prompt_text = render_prompt(body)
        message = build_message(reply)
        answer_text = render_message(message)
        completion = reply.get("completion_tokens") or max(1, count_tokens(answer_text))
        finish = reply.get("finish_reason") or ("tool_calls" if message.get("tool_calls") else "stop")
        if finish == "length" and reply.get("completion_tokens") is None:
            completion = max(1, self.n_ctx - prompt_tokens)  # the answer ran to the end of the window
        with self.lock:
            cache_n = min(common_prefix(self.cached_text, prompt_text) // CHARS_PER_TOKEN, prompt_tokens - 1)
            self.cached_text = prompt_text + answer_text
            timings = make_timings(cache_n, prompt_tokens - cache_n, completion)
            self.count(timings)
        usage = {
            "completion_tokens": completion,
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": cache_n},
        }
        usage, timings = reply.get("usage", usage), reply.get("timings", timings)  # a hostile server's, if scripted
        response = {
            "choices": [{"finish_reason": finish, "index": 0, "message": message}],
            "created": int(time.time()),
            "model": Path(self.model_path).name,
            "system_fingerprint": self.build_info,
            "object": "chat.completion",
            "usage": usage,
            "id": f"chatcmpl-fake{len(self.requests)}",
            "timings": timings,
        }
        self.responses.append(response)
        return response

    def count(self, timings: dict[str, Any]) -> None:
        self.counters["prompt_tokens_total"] += timings["prompt_n"]
        self.counters["prompt_tokens_cached_total"] += timings["cache_n"]
        self.counters["prompt_seconds_total"] += timings["prompt_ms"] / 1000
        self.counters["tokens_predicted_total"] += timings["predicted_n"]
        self.counters["tokens_predicted_seconds_total"] += timings["predicted_ms"] / 1000
        self.counters["n_decode_total"] += 1 + timings["predicted_n"]
        self.counters["n_tokens_max"] = max(self.counters["n_tokens_max"], timings["cache_n"] + timings["prompt_n"])

    def processed_unparsed(self, body: dict[str, Any], prompt_tokens: int) -> None:
        """A parse failure still processed the prompt and generated tokens: the counters and the cache move."""
        prompt_text = render_prompt(body)
        with self.lock:
            cache_n = min(common_prefix(self.cached_text, prompt_text) // CHARS_PER_TOKEN, prompt_tokens - 1)
            self.cached_text = prompt_text
            self.count(make_timings(cache_n, prompt_tokens - cache_n, 32))


COUNTERS = {
    "prompt_tokens_total": "counter",
    "prompt_seconds_total": "counter",
    "prompt_tokens_cached_total": "counter",
    "tokens_predicted_total": "counter",
    "tokens_predicted_seconds_total": "counter",
    "n_decode_total": "counter",
    "n_tokens_max": "counter",
    "requests_processing": "gauge",
    "requests_deferred": "gauge",
}


def make_timings(cache_n: int, prompt_n: int, predicted_n: int) -> dict[str, Any]:
    # A fixed speed, fast enough that an instant fake never reports more server time than the wall clock saw.
    prompt_ms, predicted_ms = prompt_n * 0.001, predicted_n * 0.01
    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n,
        "prompt_per_second": 1000 * prompt_n / prompt_ms,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / predicted_n,
        "predicted_per_second": 1000 * predicted_n / predicted_ms,
    }


def build_message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    calls = []
    for i, (name, args) in enumerate(reply.get("tool_calls") or []):
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append({"type": "function", "function": {"name": name, "arguments": arguments}, "id": f"fc_{i}_{name}"})
    if calls:
        message["tool_calls"] = calls
    return message


def render_message(message: dict[str, Any]) -> str:
    """A fixed rendering, standing in for the chat template: same messages, same text."""
    text = f"<|{message.get('role')}|>"
    if message.get("reasoning_content"):
        text += f"<think>{message['reasoning_content']}</think>"
    text += str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        text += f"<tool_call>{function.get('name')} {function.get('arguments')}</tool_call>"
    return text + "<|end|>"


def render_prompt(body: dict[str, Any]) -> str:
    tools = json.dumps(body.get("tools") or [])
    return f"<|tools|>{tools}" + "".join(render_message(m) for m in body.get("messages") or [])


def count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llama.cpp-fake"

    @property
    def fake(self) -> FakeLlama:
        return self.server.fake  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self) -> None:
        self.fake.hits.append(("GET", self.path))
        if self.path in ("/health", "/v1/health"):
            self.send_json(200, {"status": "ok"})
        elif self.path == "/props":
            self.send_json(200, self.fake.props())
        elif self.path == "/metrics" and self.fake.metrics_enabled:
            self.send_body(200, self.fake.metrics_text().encode(), "text/plain; version=0.0.4")
        elif self.path == "/metrics":
            message = "This server does not support metrics endpoint. Start it with `--metrics`"
            self.send_error_json(501, "not_supported_error", message)
        else:
            self.send_error_json(404, "not_found_error", "File Not Found")

    def do_POST(self) -> None:
        self.fake.hits.append(("POST", self.path))
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/slots/"):
            self.erase_slot()
            return
        if self.path not in ("/v1/chat/completions", "/chat/completions", "/apply-template", "/tokenize"):
            self.send_error_json(404, "not_found_error", "File Not Found")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_error_json(500, "server_error", "[json.exception.parse_error.101] parse error")
            return
        if self.path in ("/apply-template", "/tokenize"):
            self.serve_tokenizer(body)
            return
        reply, prompt_tokens = self.fake.next_reply(body)
        time.sleep(float(reply.get("delay") or 0))
        if reply["kind"] == "hang":
            self.fake.stopped.wait()
            self.close_connection = True
            return
        self.serve_reply(reply, body, prompt_tokens)

    def serve_tokenizer(self, body: dict[str, Any]) -> None:
        """/apply-template: the messages and tools as one prompt text; /tokenize: its tokens, one per
        CHARS_PER_TOKEN characters (the real server answers the same shapes)."""
        if self.path == "/apply-template":
            turns = [f"<|{m.get('role')}|>{m.get('content')}" for m in body.get("messages", [])]
            self.send_json(200, {"prompt": json.dumps(body.get("tools", [])) + "".join(turns)})
        else:
            self.send_json(200, {"tokens": list(range(count_tokens(str(body.get("content", "")))))})

    def erase_slot(self) -> None:
        """POST /slots/0?action=erase empties the prompt cache (501 without slot saving, as on the real server)."""
        if not self.fake.slot_save:
            self.send_error_json(501, "not_supported_error", "This server does not support slots action.")
            return
        with self.fake.lock:
            erased = count_tokens(self.fake.cached_text)
            self.fake.cached_text = ""
        self.send_json(200, {"id_slot": 0, "n_erased": erased})

    def serve_reply(self, reply: Reply, body: dict[str, Any], prompt_tokens: int) -> None:
        kind = reply["kind"]
        if kind == "answer":
            self.send_json(200, self.fake.answer(reply, body, prompt_tokens))
        elif kind == "context_error":
            message = (
                f"request ({prompt_tokens} tokens) exceeds the available context size "
                f"({self.fake.n_ctx} tokens), try increasing it"
            )
            extra = {"n_prompt_tokens": prompt_tokens, "n_ctx": self.fake.n_ctx}
            self.send_error_json(400, "exceed_context_size_error", message, extra)
        elif kind == "error":
            if reply.get("processed"):
                self.fake.processed_unparsed(body, prompt_tokens)
            self.send_error_json(reply["status"], reply["type"], reply["message"])
        elif kind == "raw":
            if reply["status"] == 200:
                with self.fake.lock:
                    self.fake.responses.append(reply["body"])
                    if reply["body"].get("timings"):
                        self.fake.count(reply["body"]["timings"])
            self.send_json(reply["status"], reply["body"])
        elif kind == "raw_text":
            self.send_body(reply["status"], reply["text"].encode("utf-8", "surrogatepass"), "application/json")
        elif kind == "non_json":
            self.send_body(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        elif kind == "truncated":
            data = json.dumps(self.fake.answer(prose("cut in transit"), body, prompt_tokens)).encode()
            self.send_body(200, data[: len(data) // 2], "application/json", length=len(data))
        else:  # drop, die: no answer at all
            self.close_connection = True
            if kind == "die":
                threading.Thread(target=self.fake.stop, daemon=True).start()

    def send_json(self, status: int, document: dict[str, Any]) -> None:
        self.send_body(status, json.dumps(document).encode(), "application/json; charset=utf-8")

    def send_error_json(self, status: int, type_: str, message: str, extra: dict[str, Any] | None = None) -> None:
        self.send_json(status, {"error": {"code": status, "message": message, "type": type_, **(extra or {})}})

    def send_body(self, status: int, data: bytes, content_type: str, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length if length is not None else len(data)))
        if length is not None:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted llama-server double.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON: {replies: [...], default, n_ctx, build_info, ...}")
    parser.add_argument("--record", type=Path, help="append every chat request body to this JSON-lines file")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text()) if args.script else {}
    options = {
        k: script[k]
        for k in ("n_ctx", "default", "build_info", "model_path", "supports_tool_calls", "metrics", "slot_save")
        if k in script
    }
    fake = FakeLlama(script.get("replies", []), host=args.host, port=args.port, record=args.record, **options)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with fake:
        print(f"fake llama-server listening on {fake.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is a normal way to end it
            stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
