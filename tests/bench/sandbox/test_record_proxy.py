"""The recording proxy (docker/record_proxy.py) in front of the fake llama-server: the routes it passes and refuses,
what it writes down, and how it reads usage and timings from a JSON answer and from a stream's final chunks (the
real server, streamed and not: tests/integration/test_record_proxy_real.py)."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench import ROOT
from bench.sandbox.record_proxy import RecordingProxy
from bench.testing.fake_llama import FakeLlama

sys.path.insert(0, str(ROOT / "docker"))  # the proxy's folder, as when it runs: it imports forward.py from there
from record_proxy import answer_figures, dechunk, stream_ended  # noqa: E402

pytestmark = pytest.mark.usefixtures("child_processes")

TIMINGS = {"prompt_n": 12, "cache_n": 3, "prompt_ms": 5.0, "predicted_n": 4, "predicted_ms": 9.0}
USAGE = {"prompt_tokens": 15, "completion_tokens": 4, "total_tokens": 19}


def chunked(body: bytes, size: int = 7) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_streams_usage_and_timings_are_read_from_its_final_chunks() -> None:
    chunks = [
        {"choices": [{"delta": {"content": "Hi"}, "finish_reason": None}]},
        {"choices": [{"delta": {}, "finish_reason": "length"}]},
        {"choices": [], "usage": USAGE, "timings": TIMINGS},
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert dechunk(chunked(body)) == body
    figures = answer_figures(head, chunked(body))
    assert figures == {"status": 200, "streamed": True, "usage": USAGE, "timings": TIMINGS, "finish_reason": "length"}
    assert stream_ended(head, chunked(body)) and not stream_ended(head, chunked(body[:-14]))


def test_a_stream_whose_last_event_came_ended_though_its_client_closed_before_the_body_did() -> None:
    """codex closes its side once the Responses stream's response.completed came, before the server's end of body:
    the answer is whole (its timings are in that event), so the log does not call it cut."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    for last in ({"type": "response.completed", "response": {}}, {"type": "message_stop"}):
        body = b"event: x\ndata: " + json.dumps({"type": "response.created"}).encode() + b"\n\n"
        whole = body + b"event: x\ndata: " + json.dumps(last).encode() + b"\n\n"
        assert not stream_ended(head, chunked(body)) and stream_ended(head, chunked(whole)[:-5])


def test_a_messages_streams_usage_adds_up_over_its_events() -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 30, "output_tokens": 1}}},
        {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 8}},
    ]
    body = b"".join(b"event: x\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)
    figures = answer_figures(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", body)
    assert figures["usage"] == {"input_tokens": 30, "output_tokens": 8} and figures["finish_reason"] == "max_tokens"


def test_the_proxy_passes_the_model_api_refuses_the_rest_and_logs_each_exchange(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    with FakeLlama() as flint, RecordingProxy(flint.url, log, checkout=ROOT) as url:
        for path in ("/slots", "/metrics", "/v1/completions"):
            assert httpx.get(url + path).status_code == 403, path
        assert httpx.post(url + "/slots/0?action=save", json={"filename": "x"}).status_code == 403
        assert httpx.get(url + "/health").status_code == 200
        answer = httpx.post(url + "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert answer.status_code == 200 and answer.json()["timings"]["prompt_n"] > 0
        too_big = b"x" * (4 * 1024 * 1024 + 1)
        assert httpx.post(url + "/v1/messages", content=too_big).status_code == 413
        assert [(m, p) for m, p in flint.hits if p != "/health"] == [("POST", "/v1/chat/completions")]
    health, chat = [json.loads(line) for line in log.read_text().splitlines()]
    assert health["route"] == "GET /health" and health["status"] == 200
    assert chat["route"] == "POST /v1/chat/completions" and chat["request"]["messages"][0]["content"] == "hi"
    assert chat["timings"] == answer.json()["timings"] and chat["usage"] == answer.json()["usage"]
    assert chat["streamed"] is False and chat["finish_reason"] == "stop"


def test_a_server_that_closes_without_answering_is_a_502_and_nothing_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    with socket.socket() as silent:  # accepts, reads the request, closes: no HTTP answer
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]

        def close_each() -> None:
            connection, _ = silent.accept()
            with connection:
                connection.recv(65536)

        closer = threading.Thread(target=close_each, daemon=True)
        closer.start()
        with RecordingProxy(f"http://127.0.0.1:{port}", log, checkout=ROOT) as url:
            assert httpx.get(url + "/health", timeout=30).status_code == 502
        closer.join(10)
    assert log.read_text() == ""


def ask_and_lose_the_answer(url: str, body: dict[str, object]) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the proxy stops before any answer: the client sees it close
        httpx.post(url + "/v1/chat/completions", json=body, timeout=30)


@contextlib.contextmanager
def mute_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A server that accepts a request and never answers, as one deep in a prefill: its URL and the connections it
    holds (closed when the block ends)."""
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        held: list[socket.socket] = []
        threading.Thread(target=lambda: held.append(mute.accept()[0]), daemon=True).start()
        try:
            yield f"http://127.0.0.1:{mute.getsockname()[1]}", held
        finally:
            for connection in held:
                connection.close()


def test_a_request_still_waiting_when_the_proxy_stops_is_written_down_as_in_flight(tmp_path: Path) -> None:
    """An agent killed while it waits: the proxy is stopped with the request unanswered, and the log still has it."""
    log = tmp_path / "proxy.jsonl"
    with mute_server() as (server, held):
        body = {"messages": [{"role": "user", "content": "hi"}], "stream": True}
        with RecordingProxy(server, log, checkout=ROOT) as url:
            threading.Thread(target=ask_and_lose_the_answer, args=(url, body), daemon=True).start()
            for _ in range(100):
                if held:
                    break
                threading.Event().wait(0.05)
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["route"] == "POST /v1/chat/completions" and entry["request"] == body
    assert entry["in_flight"] is True and entry["status"] is None and entry["streamed"] is True


def test_the_longest_an_answer_may_take_is_the_runs_request_timeout(tmp_path: Path) -> None:
    """A prefill longer than the proxy's default (900 s) is the run's to allow: the proxy is given its timeout."""
    log = tmp_path / "proxy.jsonl"
    with mute_server() as (server, _), RecordingProxy(server, log, checkout=ROOT, timeout_s=1.5) as url:
        body = {"messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
    assert answer.status_code == 504 and "no answer within 1.5 s" in answer.text
