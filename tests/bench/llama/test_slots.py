"""Whether a server is idle before a run: its /slots, read from the bench's side, with a stuck server told apart."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from bench.llama.api import busy_slot, wait_idle


class Slots(http.server.BaseHTTPRequestHandler):
    answers: list[tuple[int, object, float]] = []  # (status, body, delay) served in turn; the last one repeats

    def do_GET(self) -> None:  # noqa: N802
        status, body, delay = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        time.sleep(delay)
        data = json.dumps(body).encode()
        # The stuck server's client gave up before the answer: writing it finds the connection closed, which is the
        # point (unsuppressed, the handler's thread printed a stray traceback into a later test's output).
        with contextlib.suppress(ConnectionError):
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slots)
    httpd.block_on_close = False  # a handler still sleeping (the stuck server) is not waited for
    # Polled every 0.02 s, so that shutdown() at the end does not wait out the default half second.
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


BUSY, IDLE = [{"id": 0, "is_processing": True}], [{"id": 0, "is_processing": False}]


def test_a_busy_slot_is_waited_for_until_it_is_idle(server: str) -> None:
    Slots.answers = [(200, BUSY, 0), (200, BUSY, 0), (200, IDLE, 0)]

    assert busy_slot(server) == f"slot 0 of {server} is still processing a request"
    assert wait_idle([server], timeout_s=10, poll_s=0.05) is None


def test_a_slot_busy_for_too_long_or_a_stuck_server_says_why(server: str) -> None:
    """The limits are the product's settings made short (5 s to answer /slots, polls every 0.5 s): what is tested
    is what happens when they pass, not their length."""
    Slots.answers = [(200, BUSY, 0)]
    assert "still processing" in (wait_idle([server], timeout_s=0.3, poll_s=0.05) or "")

    Slots.answers = [(200, IDLE, 1.0)]  # answers only well after the 0.3 s it is given
    stuck = busy_slot(server, answer_within_s=0.3) or ""
    assert "did not answer" in stuck and "the server is stuck" in stuck


def test_a_server_without_the_slots_endpoint_cannot_tell_and_is_taken_as_idle(server: str) -> None:
    Slots.answers = [(501, {"error": "disabled"}, 0)]

    assert busy_slot(server) is None


def test_a_server_that_is_gone_is_not_waited_for(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens at the second address: it will never be idle, so the wait ends at once (and the runner
    restarts it) instead of polling out the whole timeout. A stuck one that still accepts connections is waited."""
    gone = socket.socket()
    gone.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{gone.getsockname()[1]}"
    gone.close()
    sleeps: list[float] = []  # the wait's polls (the test server's handler sleeps 0)
    monkeypatch.setattr("bench.llama.api.time.sleep", lambda s: sleeps.append(s) if s else None)
    Slots.answers = [(200, IDLE, 0)]

    assert "did not answer" in (wait_idle([server, url], timeout_s=30) or "")
    assert sleeps == []
    Slots.answers = [(200, BUSY, 0)]
    assert "still processing" in (wait_idle([server], timeout_s=0.2) or "")
    assert sleeps  # the busy one was polled again
