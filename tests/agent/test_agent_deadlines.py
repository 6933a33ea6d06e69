"""Timeouts bound the whole request and the whole command: a server that sends one byte at a time, or a command
that leaves something holding its output open, cost at most the timeout and a small margin."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import RunAgent

from agent.jeff import Jeff
from agent.server import ChatClient, TransportError
from agent.shell import run_command

MARGIN = 1.0  # seconds past the timeout: thread start, the kill, the drain of what is left
BODY = {"messages": [{"role": "user", "content": "hi"}]}
PROPS = b'{"default_generation_settings": {"n_ctx": 4096}, "build_info": "drip"}'


class DripServer:
    """A real socket server: /props answers at once; every other request gets its answer one byte at a time."""

    def __init__(self, interval: float, headers_first: bool) -> None:
        self.interval = interval
        self.headers_first = headers_first
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stopped = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(connection,), daemon=True).start()

    def answer(self, connection: socket.socket) -> None:
        with connection:
            request = connection.recv(65_536)
            body = b'{"choices": [{"message": {"content": "' + b"x" * 1000 + b'"}}]}'
            if request.startswith(b"GET /props"):
                body = PROPS
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
            if request.startswith(b"GET /props"):
                connection.sendall(head + body)
                return
            if self.headers_first:
                connection.sendall(head)
                head = b""
            for byte in head + body:
                if self.stopped.wait(self.interval):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture(params=[False, True], ids=["slow status line", "slow body"])
def drip(request: pytest.FixtureRequest) -> Iterator[DripServer]:
    server = DripServer(interval=0.1, headers_first=request.param)
    yield server
    server.close()


def test_a_dripping_server_is_a_timeout_within_the_request_timeout(drip: DripServer) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        ChatClient(drip.url, timeout=1.0, retries=0).chat(BODY)
    took = time.monotonic() - started
    assert caught.value.type == "timeout" and "within 1 s" in caught.value.message
    assert 0.9 < took < 1.0 + MARGIN, took


def test_jeff_costs_at_most_his_timeout(drip: DripServer) -> None:
    opinion = Jeff(drip.url, timeout=1.0).opinion("ls")
    assert opinion.text is None and opinion.error is not None and opinion.error.startswith("timeout")
    assert opinion.seconds < 1.0 + MARGIN


def test_the_agent_stops_with_a_server_error_within_its_request_timeout(run_agent: RunAgent, repo: Path) -> None:
    server = DripServer(interval=0.1, headers_first=True)
    started = time.monotonic()
    try:
        run = run_agent(repo, server.url, "--request-timeout", "1", "--retries", "1", "--retry-delay", "0")
    finally:
        server.close()
    took = time.monotonic() - started
    assert run.stop["reason"] == "server_error" and "within 1 s" in run.stop["message"]
    assert [e["attempt"] for e in run.of("http_error")] == [1, 2]
    assert took < 2 * 1.0 + 2 * MARGIN, took


@pytest.mark.usefixtures("child_processes")
def test_a_command_that_hangs_ends_at_its_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    output = run_command("echo started; sleep 30", tmp_path, 1.0, 8_000)
    assert output.exit_code is None and output.text == "started\n"
    assert time.monotonic() - started < 1.0 + MARGIN


@pytest.mark.usefixtures("child_processes")
def test_a_detached_process_holding_the_output_does_not_stretch_the_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    output = run_command("setsid sleep 3 & sleep 30", tmp_path, 1.0, 8_000)  # `run` leaves the detached one be
    assert output.exit_code is None
    assert time.monotonic() - started < 1.0 + MARGIN + 1.0  # the drain waits once for the escaped holder


@pytest.mark.usefixtures("child_processes")
def test_a_contained_command_leaves_nothing_running_at_its_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "still-alive"
    command = f"setsid bash -c 'sleep 2; touch {marker}' & sleep 30"
    started = time.monotonic()
    output = run_command(command, tmp_path, 1.0, 8_000, kill_leftovers=True)
    assert output.exit_code is None and time.monotonic() - started < 1.0 + MARGIN
    time.sleep(1.5)
    assert not marker.exists()  # the detached process died with the command
