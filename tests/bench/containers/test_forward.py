"""docker/forward.py, the filter between sandboxes and the model servers, run here against the fake llama-server:
chat, props and health pass unchanged; /slots, /metrics and everything else get 403 and never reach the server.
tests/integration/test_docker_sandbox.py checks the same from inside a sandbox container."""

from __future__ import annotations

import contextlib
import json
import signal
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
def running_forwarder(target: str, *options: str) -> Iterator[str]:
    """The forwarder on a free loopback port, passing on to `target`; yields its base URL."""
    command = [sys.executable, str(ROOT / "docker" / "forward.py"), *options, f"127.0.0.1:0={target}"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "forwarding 127.0.0.1:PORT -> ..."
        try:
            yield f"http://{line.split()[1]}"
        finally:
            proc.kill()


@pytest.fixture
def forwarder(server: fake_llama.FakeLlama, child_processes: None) -> Iterator[str]:
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


@pytest.mark.usefixtures("child_processes")
def test_an_unreachable_server_is_a_502() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        dead_port = unused.getsockname()[1]
    with running_forwarder(f"127.0.0.1:{dead_port}") as url:
        assert request(f"{url}/health")[0] == 502


AGENT_TURNS = [
    {"role": "system", "content": "You are Flint."},
    {"role": "user", "content": "Add due dates."},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Read it first.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
]


def chat(**fields: Any) -> dict[str, Any]:
    return {"messages": AGENT_TURNS, "stream": False, "temperature": 0.0, "seed": 42, **fields}


def test_the_agents_own_requests_pass(forwarder: str, server: fake_llama.FakeLlama) -> None:
    from agent.prompts import TOOL_SPECS

    server.add(fake_llama.prose("one"))
    server.add(fake_llama.prose("two"))
    flint = chat(tools=TOOL_SPECS)
    jeff = {"messages": AGENT_TURNS[:2], "max_tokens": 24, "temperature": 0.0}  # max_tokens within the window

    assert request(f"{forwarder}/v1/chat/completions", "POST", flint)[0] == 200
    assert request(f"{forwarder}/v1/chat/completions", "POST", jeff)[0] == 200
    assert [r["messages"] for r in server.requests[-2:]] == [AGENT_TURNS, AGENT_TURNS[:2]]


GRAMMAR = "root ::= " + " | ".join(f'"w{i}"' for i in range(20_000))  # 240 KB, as in issue 19


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (chat(grammar=GRAMMAR, max_tokens=10**6), "'grammar' is not a field the agent sends"),
        (chat(n_probs=20_000), "'n_probs' is not a field the agent sends"),
        (chat(max_tokens=10**6), "max_tokens must be a whole number from 1 to the window"),
        (chat(json_schema={"type": "object"}), "'json_schema' is not a field"),
        (chat(stream=True), "stream must be false"),
        (chat(temperature=1e308), "temperature must be between"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "a message's content must be text"),
        ({"messages": [{"role": "root", "content": "x"}]}, "each message is an object with a role"),
        ({"messages": []}, "messages is a list of 1 to"),
        (
            chat(
                tools=[{"type": "function", "function": {"name": "x", "parameters": json.loads("[" * 12 + "]" * 12)}}]
            ),
            "a small parameters schema",
        ),
    ],
    ids=["grammar", "n_probs", "max_tokens", "json_schema", "stream", "temperature", "image", "role", "empty", "deep"],
)
def test_chat_fields_the_agent_never_sends_are_refused_before_the_server(
    forwarder: str, server: fake_llama.FakeLlama, body: dict[str, Any], reason: str
) -> None:
    status, answer, _ = request(f"{forwarder}/v1/chat/completions", "POST", body)

    assert status == 400
    assert reason in json.loads(answer)["error"]["message"]
    assert server.requests == []


@pytest.mark.usefixtures("child_processes")
def test_with_the_runs_sampling_only_those_settings_pass(server: fake_llama.FakeLlama) -> None:
    sampling = json.dumps({"temperature": 0.0, "seed": 42})
    with running_forwarder(f"127.0.0.1:{server.server.server_address[1]}", "--sampling", f"0={sampling}") as url:
        server.add(fake_llama.prose("ok"))
        assert request(f"{url}/v1/chat/completions", "POST", chat())[0] == 200
        refused = request(f"{url}/v1/chat/completions", "POST", chat(temperature=0.7))

    assert refused[0] == 400 and "the run's sampling settings are" in json.loads(refused[1])["error"]["message"]
    assert len(server.requests) == 1


def raw_status(url: str, raw: bytes) -> int:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        return int(sock.makefile("rb").readline().split()[1])


def test_a_body_too_large_or_too_many_arrays_is_refused_unread(forwarder: str, server: fake_llama.FakeLlama) -> None:
    huge = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 62914560\r\n\r\n" + b"x" * 1024
    brackets = b"[" + b"[]," * 300_000 + b"[]]"
    many = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(brackets) + brackets

    assert raw_status(forwarder, huge) == 413
    assert raw_status(forwarder, many) == 400
    assert server.requests == []


def test_connections_past_the_limit_get_503_and_the_rest_still_pass(
    forwarder: str, server: fake_llama.FakeLlama
) -> None:
    host, port = forwarder.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(12)]  # each sends nothing
    try:
        statuses = []
        for sock in idle[8:]:
            statuses.append(int(sock.makefile("rb").readline().split()[1]))
        assert statuses == [503] * 4
    finally:
        for sock in idle:
            sock.close()
    server.add(fake_llama.prose("after"))
    assert request(f"{forwarder}/v1/chat/completions", "POST", chat())[0] == 200


@pytest.mark.usefixtures("child_processes")
def test_an_answer_past_the_time_limit_is_a_504_and_the_server_connection_closes(
    server: fake_llama.FakeLlama,
) -> None:
    server.add({**fake_llama.prose("late"), "delay": 5})
    with running_forwarder(f"127.0.0.1:{server.server.server_address[1]}", "--timeout", "1") as url:
        status, answer, _ = request(f"{url}/v1/chat/completions", "POST", chat())

    assert status == 504 and "no answer within 1 s" in json.loads(answer)["error"]["message"]


@pytest.mark.usefixtures("child_processes")
def test_a_sigterm_ends_the_forwarder_at_once_and_cleanly(server: fake_llama.FakeLlama) -> None:
    """As a container's PID 1 it would ignore a signal it has no handler for, and `docker stop` would wait 10 s."""
    command = [
        sys.executable,
        str(ROOT / "docker" / "forward.py"),
        f"127.0.0.1:0=127.0.0.1:{server.server.server_address[1]}",
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None and proc.stdout.readline().startswith("forwarding ")
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10)
        finally:
            proc.kill()
        assert code == 0, proc.stderr.read() if proc.stderr else ""
