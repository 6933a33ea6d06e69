"""A scripted llama-server double: answers from a queue with the exact shapes of the real server.

In a test:

    with FakeLlama([fake_llama.tool_call("read_file", {"path": "todo.py"}), fake_llama.prose("Done.")]) as flint:
        ...  # point the agent at flint.url; afterwards flint.requests holds every chat request body

As a separate process (for tests that need an external server):

    python -m bench.testing.fake_llama --port 8081 --script replies.json [--record requests.jsonl]

where replies.json is {"replies": [...], "n_ctx": 4096, ...} with the same dicts the helpers below build.

What it models (shapes measured on the pinned llama-server build; the replies are bench/testing/fake_replies.py,
the counting bench/testing/fake_prompt.py, the answers bench/testing/fake_model.py):
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
- /completion answers a plain completion with timings only (speed calibration);
- /apply-template renders a chat request's messages as the prompt, /tokenize splits a text into its tokens (one
  per CHARS_PER_TOKEN characters), so the longest common prefix of two token lists is what the cache reuses.
- `reasoning_history="last_turn"` renders the reasoning of earlier answers only after the last user message (as
  some templates do); a reply with `"forget": True` finds the slot's cache lost (as a sliding-window model without a
  checkpoint would).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.testing.fake_model import ScriptedServer
from bench.testing.fake_prompt import CHARS_PER_TOKEN, count_tokens, make_timings, render_prompt
from bench.testing.fake_replies import (
    NEW_PARSE_MESSAGE,
    OLD_PARSE_MESSAGE,
    Reply,
    context_error,
    die,
    drop_connection,
    hang,
    http_error,
    length_cut,
    loading,
    non_json,
    parse_failure,
    prose,
    raw,
    raw_text,
    tool_call,
    tool_calls,
    truncated_body,
)

# The double, and the script helpers it is used with (`fake_llama.tool_call(...)`), in one place.
__all__ = [
    "CHARS_PER_TOKEN",
    "NEW_PARSE_MESSAGE",
    "OLD_PARSE_MESSAGE",
    "FakeLlama",
    "Reply",
    "context_error",
    "count_tokens",
    "die",
    "drop_connection",
    "hang",
    "http_error",
    "length_cut",
    "loading",
    "main",
    "non_json",
    "parse_failure",
    "prose",
    "raw",
    "raw_text",
    "render_prompt",
    "tool_call",
    "tool_calls",
    "truncated_body",
]


class FakeLlama(ScriptedServer):
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
        reasoning_history: str = "all",
    ) -> None:
        super().__init__(
            replies,
            n_ctx=n_ctx,
            default=default,
            build_info=build_info,
            model_path=model_path,
            supports_tool_calls=supports_tool_calls,
            metrics=metrics,
            slot_save=slot_save,
            record=record,
            reasoning_history=reasoning_history,
        )
        self.server = _Server((host, port), _Handler)
        self.server.daemon_threads = True
        self.server.fake = self  # type: ignore[attr-defined]
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()  # hung requests end when the double stops

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}:{port}"

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


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up on an answer (its deadline, a killed agent) closed the connection before it was
        written: as quiet as the real server, not a traceback printed from the handler's thread into whatever test
        runs next."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llama.cpp-fake"
    # The headers and the body go out in two writes; with Nagle's algorithm the second waits for the client's
    # delayed ACK of the first (about 40 ms on every keep-alive request). The real server answers in a millisecond.
    disable_nagle_algorithm = True

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
        if self.path in ("/apply-template", "/tokenize"):
            self.tokenizer_endpoint(json.loads(raw or b"{}"))
            return
        if self.path == "/completion":  # a plain completion of token ids: only its timings matter here
            body = json.loads(raw or b"{}")
            prompt = body.get("prompt") if isinstance(body.get("prompt"), list) else []
            timings = make_timings(0, max(1, len(prompt)), int(body.get("n_predict") or 16))
            self.send_json(200, {"content": "x", "timings": timings})
            return
        if self.path not in ("/v1/chat/completions", "/chat/completions"):
            self.send_error_json(404, "not_found_error", "File Not Found")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send_error_json(500, "server_error", "[json.exception.parse_error.101] parse error")
            return
        reply, prompt_tokens = self.fake.next_reply(body)
        time.sleep(float(reply.get("delay") or 0) + float(reply.get("compute_s") or 0))
        if reply["kind"] == "hang":
            self.fake.stopped.wait()
            self.close_connection = True
            return
        self.serve_reply(reply, body, prompt_tokens)

    def tokenizer_endpoint(self, body: dict[str, Any]) -> None:
        if self.path == "/apply-template":
            self.send_json(200, {"prompt": self.fake.render(body)})
        else:
            self.send_json(200, {"tokens": self.fake.tokenize(str(body.get("content") or ""))})

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
        for k in (
            "n_ctx",
            "default",
            "build_info",
            "model_path",
            "supports_tool_calls",
            "metrics",
            "slot_save",
            "reasoning_history",
        )
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
