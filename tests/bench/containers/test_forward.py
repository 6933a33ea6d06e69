"""docker/forward.py, the filter between sandboxes and the model servers, run here against the fake llama-server:
chat, props and health pass unchanged; /slots, /metrics and everything else get 403 and never reach the server.
tests/integration/test_docker_sandbox.py checks the same from inside a sandbox container."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from bench import ROOT
from bench.testing import fake_llama


@pytest.fixture
def server() -> Iterator[fake_llama.FakeLlama]:
    fake = fake_llama.FakeLlama(slot_save=True).start()
    yield fake
    fake.stop()


@contextlib.contextmanager
def running_forwarder(target: str) -> Iterator[str]:
    """The forwarder on a free loopback port, passing on to `target`; yields its base URL."""
    command = [sys.executable, str(ROOT / "docker" / "forward.py"), f"127.0.0.1:0={target}"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "forwarding 127.0.0.1:PORT -> ..."
        try:
            yield f"http://{line.split()[1]}"
        finally:
            proc.kill()


@pytest.fixture
def forwarder(server: fake_llama.FakeLlama) -> Iterator[str]:
    with running_forwarder(f"127.0.0.1:{server.server.server_address[1]}") as url:
        yield url


def request(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> tuple[int, bytes, str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.read(), response.headers.get("Connection", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("Connection", "")


def test_chat_props_and_health_pass_unchanged(forwarder: str, server: fake_llama.FakeLlama) -> None:
    server.add(fake_llama.prose("hello there"))
    chat = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0}

    status, body, connection = request(f"{forwarder}/v1/chat/completions", "POST", chat)

    assert status == 200 and connection == "close"
    assert json.loads(body)["choices"][0]["message"]["content"] == "hello there"
    assert server.requests[-1]["messages"] == chat["messages"]  # the body arrived as sent
    direct = urllib.request.urlopen(f"{server.url}/props", timeout=10).read()
    assert request(f"{forwarder}/props") == (200, direct, "close")
    assert request(f"{forwarder}/health")[:2] == (200, b'{"status": "ok"}')


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/slots/0?action=save"),
        ("POST", "/slots/0?action=erase"),
        ("GET", "/slots"),
        ("GET", "/metrics"),
        ("POST", "/props"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions/../../slots/0?action=save"),
        ("GET", "/%70rops"),
    ],
)
def test_everything_else_is_refused_without_reaching_the_server(
    forwarder: str, server: fake_llama.FakeLlama, method: str, path: str
) -> None:
    status, body, _ = request(forwarder + path, method, {} if method == "POST" else None)

    assert status == 403
    assert "is not forwarded to the model server" in json.loads(body)["error"]["message"]
    assert server.hits == []


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
        (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400),
        (b"GET http://flint/props HTTP/1.1\r\n\r\n", 400),
        (b"GET /props HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ],
    ids=["chunked", "two lengths", "absolute form", "huge head"],
)
def test_requests_that_could_smuggle_another_are_refused(
    forwarder: str, server: fake_llama.FakeLlama, raw: bytes, status: int
) -> None:
    host, port = forwarder.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        answer = sock.makefile("rb").readline()

    assert answer.split()[1] == str(status).encode()
    assert server.hits == []


def test_an_unreachable_server_is_a_502() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead_port = unused.getsockname()[1]
    with running_forwarder(f"127.0.0.1:{dead_port}") as url:
        assert request(f"{url}/health")[0] == 502
