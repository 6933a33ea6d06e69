"""The agent against the real llama-server on CPU with the real small model (SmolLM2-135M-Instruct).

The small model's chat template has no tool support, so answers come without tool calls: that is expected. What
these tests check is the plumbing the bench relies on: the real window size, real usage and timings in the trace,
the /metrics cross-check, and a real cut at the end of a tiny window handled as a cut answer.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent import prompts
from agent.cli import main
from bench.llama.api import PROMPT_TOKENS_COUNTER, read_metrics
from bench.llama.binaries import find_small_model
from bench.llama.process import LlamaProcess

pytestmark = pytest.mark.llama
# The tiny window a cut is met at: the prompt (the system prompt and the task; this template renders no tools) takes
# about a hundred tokens of it, and both steps of that test write until it is full, so the smaller it is the less
# the CPU writes (256 is half the time of 512, and the same cut).
TINY = 256


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (path / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return path


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LlamaProcess]:
    # One thread: with more, llama.cpp's threads spin-wait for each other, and on a small machine shared with other
    # work that can slow generation a hundredfold.
    process = LlamaProcess(find_small_model(), request.param, tmp_path / "llama-server.log", threads=1)
    with process:
        yield process


class RecordingProxy:
    """Passes chat requests through to the real server and keeps their bodies, to see what the agent sent."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.bodies: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def do_GET(self) -> None:
                self.relay(None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.bodies.append(json.loads(raw))
                self.relay(raw)

            def relay(self, raw: bytes | None) -> None:
                forward = urllib.request.Request(
                    proxy.target + self.path, data=raw, headers={"Content-Type": "application/json"}
                )
                try:
                    with urllib.request.urlopen(forward, timeout=600) as response:
                        status, data = response.status, response.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_agent(repo: Path, url: str, events: Path, *extra: str) -> int:
    args = ["--repo", str(repo), "--task", "Add a function sub(a, b) to calc.py.", "--flint", url]
    return main([*args, "--no-jeff", "--approve", "no", "--events", str(events), *extra])


@pytest.mark.parametrize("server", [4096], indirect=True)
def test_a_short_run_records_the_real_window_timings_and_a_stop(
    server: LlamaProcess, repo: Path, tmp_path: Path
) -> None:
    events_path = tmp_path / "events.jsonl"
    before = read_metrics(server.url)[PROMPT_TOKENS_COUNTER]
    sampling = json.dumps({"temperature": 0, "seed": 1, "max_tokens": 48})
    run_agent(repo, server.url, events_path, "--max-steps", "2", "--sampling", sampling)
    after = read_metrics(server.url)[PROMPT_TOKENS_COUNTER]
    events = events_of(events_path)
    start, stop = events[0], events[-1]
    assert start["event"] == "start" and start["n_ctx"] == 4096 and start["flint_build"]
    responses = [e for e in events if e["event"] == "response"]
    assert responses, f"no answer came back: {events}"
    for response in responses:
        timings, usage = response["timings"], response["usage"]
        assert timings["prompt_n"] > 0 and timings["predicted_ms"] > 0 and timings["predicted_n"] > 0
        assert usage["prompt_tokens"] == timings["prompt_n"] + timings["cache_n"]
        assert response["finish_reason"] in ("stop", "length", "tool_calls")
    assert stop["event"] == "stop" and stop["reason"] in ("done", "step_limit") and stop["steps"] == len(responses)
    assert after - before == sum(r["timings"]["prompt_n"] for r in responses)  # the bench's cross-check


@pytest.mark.parametrize("server", [TINY], indirect=True)
def test_a_real_cut_at_the_end_of_a_tiny_window_is_dropped_by_part3(
    server: LlamaProcess, repo: Path, tmp_path: Path
) -> None:
    events_path = tmp_path / "events.jsonl"
    sampling = json.dumps({"ignore_eos": True, "temperature": 0})  # write until the window is full
    with RecordingProxy(server.url) as proxy:
        run_agent(repo, proxy.url, events_path, "--preset", "part3", "--max-steps", "2", "--sampling", sampling)
    events = events_of(events_path)
    refused = [e for e in events if e["event"] == "http_error"]
    assert not refused, f"the {TINY}-token window refused the prompt itself; shrink the system prompt: {refused}"
    first = next(e for e in events if e["event"] == "response")
    assert first["finish_reason"] == "length" and first["usage"]["total_tokens"] >= TINY - 12
    cut = next(e for e in events if e["event"] == "cut")
    assert (cut["step"], cut["kind"], cut["dropped"]) == (1, "length", True)
    assert len(proxy.bodies) == 2
    assert proxy.bodies[1]["messages"][:-1] == proxy.bodies[0]["messages"]  # the cut answer was not kept
    assert proxy.bodies[1]["messages"][-1] == {"role": "user", "content": prompts.cut_off_note(TINY)}
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "step_limit"
