"""The llama-server double itself: its shapes, its prompt-cache model, its counters, and its script mode."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from bench.llama.api import parse_metrics
from bench.testing import fake_llama
from bench.testing.fake_llama import FakeLlama


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read())


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def chat(*contents: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": c} for c in contents]}


def test_usage_and_timings_add_up_and_the_cache_covers_the_common_prefix() -> None:
    with FakeLlama([fake_llama.prose("first answer"), fake_llama.prose("second")]) as fake:
        _, first = post(fake.url, chat("x" * 400))
        _, second = post(fake.url, chat("x" * 400, "y" * 40))
    for response in (first, second):
        usage, timings = response["usage"], response["timings"]
        assert timings["cache_n"] + timings["prompt_n"] == usage["prompt_tokens"]
        assert usage["prompt_tokens_details"]["cached_tokens"] == timings["cache_n"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert first["timings"]["cache_n"] == 0
    assert second["timings"]["cache_n"] >= 100 and second["timings"]["prompt_n"] < 20


def test_changing_an_early_message_makes_the_whole_prompt_reprocessed() -> None:
    with FakeLlama() as fake:
        post(fake.url, chat("x" * 400, "y" * 400))
        _, same = post(fake.url, chat("x" * 400, "y" * 400))
        _, changed = post(fake.url, chat("z" * 400, "y" * 400))
    assert same["timings"]["prompt_n"] == 1  # a fully cached prompt still evaluates one token
    assert changed["timings"]["cache_n"] < 10


def test_metrics_count_what_was_served() -> None:
    with FakeLlama([fake_llama.prose("a"), fake_llama.parse_failure(), fake_llama.prose("b")]) as fake:
        served = [post(fake.url, chat("q" * (100 * i))) for i in (1, 2, 3)]
        metrics = parse_metrics(get(fake.url + "/metrics"))
    assert [status for status, _ in served] == [200, 500, 200]
    answered = [body for status, body in served if status == 200]
    unparsed_prompt_n = 50  # all 200 chars of the second prompt are new after the first answer
    assert metrics["llamacpp:prompt_tokens_total"] >= sum(b["timings"]["prompt_n"] for b in answered)
    assert (
        metrics["llamacpp:prompt_tokens_total"]
        <= sum(b["timings"]["prompt_n"] for b in answered) + unparsed_prompt_n + 5
    )
    assert metrics["llamacpp:tokens_predicted_total"] == sum(b["timings"]["predicted_n"] for b in answered) + 32


def test_metrics_equal_the_sum_of_prompt_n_when_every_answer_parsed() -> None:
    with FakeLlama() as fake:
        bodies = [post(fake.url, chat("q" * (100 * i)))[1] for i in (1, 2, 3)]
        metrics = parse_metrics(get(fake.url + "/metrics"))
    assert metrics["llamacpp:prompt_tokens_total"] == sum(b["timings"]["prompt_n"] for b in bodies)
    assert metrics["llamacpp:prompt_tokens_cached_total"] == sum(b["timings"]["cache_n"] for b in bodies)


def test_props_health_and_metrics_off() -> None:
    with FakeLlama(n_ctx=2048, build_info="b9999-abc", supports_tool_calls=False, metrics=False) as fake:
        props = json.loads(get(fake.url + "/props"))
        assert json.loads(get(fake.url + "/health")) == {"status": "ok"}
        with pytest.raises(urllib.error.HTTPError) as caught:
            get(fake.url + "/metrics")
    caught.value.close()
    assert props["default_generation_settings"]["n_ctx"] == 2048 and props["build_info"] == "b9999-abc"
    assert props["chat_template_caps"]["supports_tool_calls"] is False
    assert caught.value.code == 501


def test_an_oversized_prompt_gets_the_context_error_without_using_the_script() -> None:
    with FakeLlama([fake_llama.prose("kept for later")], n_ctx=256) as fake:
        status, error = post(fake.url, chat("w" * 2000))
        _, answer = post(fake.url, chat("short"))
    assert status == 400
    assert error["error"]["type"] == "exceed_context_size_error"
    expected_tokens = fake_llama.count_tokens(fake_llama.render_prompt(chat("w" * 2000)))
    assert error["error"]["n_prompt_tokens"] == expected_tokens > 500 and error["error"]["n_ctx"] == 256
    assert answer["choices"][0]["message"]["content"] == "kept for later"


def test_a_length_cut_ends_at_the_window() -> None:
    with FakeLlama([fake_llama.length_cut("half an answer")], n_ctx=1024) as fake:
        _, body = post(fake.url, chat("x" * 400))
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["total_tokens"] == 1024


def test_tool_calls_carry_arguments_as_a_json_string_or_as_scripted() -> None:
    replies = [fake_llama.tool_call("read_file", {"path": "a.py"}), fake_llama.tool_call("run", "{broken")]
    with FakeLlama(replies) as fake:
        _, good = post(fake.url, chat("go"))
        _, bad = post(fake.url, chat("go"))
    call = good["choices"][0]["message"]["tool_calls"][0]
    assert good["choices"][0]["finish_reason"] == "tool_calls"
    assert call["type"] == "function" and json.loads(call["function"]["arguments"]) == {"path": "a.py"}
    assert bad["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{broken"


@pytest.mark.usefixtures("child_processes")
def test_script_mode_serves_a_json_script_and_records_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"n_ctx": 1000, "replies": [fake_llama.prose("from the script")]}))
    record = tmp_path / "requests.jsonl"
    command = [sys.executable, "-m", "bench.testing.fake_llama", "--script", str(script), "--record", str(record)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        _, body = post(url, chat("hello"))
        props = json.loads(get(url + "/props"))
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
    assert body["choices"][0]["message"]["content"] == "from the script"
    assert props["default_generation_settings"]["n_ctx"] == 1000
    assert [json.loads(line) for line in record.read_text().splitlines()] == [chat("hello")]
    assert process.returncode == 0


def test_a_scripted_compute_time_is_the_servers_own_and_a_delay_is_not() -> None:
    """compute_s is work the double reports in its timings (a busy server: no stall for the bench to book, as
    perf/scale.py's scripted runs need); delay is time it waits beyond them (a stalled server)."""
    with FakeLlama(
        [{**fake_llama.prose("busy"), "compute_s": 0.3}, {**fake_llama.prose("late"), "delay": 0.3}]
    ) as fake:
        for beyond_timings in (False, True):
            started = time.monotonic()
            _, answer = post(fake.url, chat("hello"))
            waited_ms = (time.monotonic() - started) * 1000
            server_ms = answer["timings"]["prompt_ms"] + answer["timings"]["predicted_ms"]
            assert waited_ms >= 300 and (waited_ms - server_ms >= 290) is beyond_timings, (waited_ms, server_ms)


def test_answers_are_sent_without_waiting_for_the_clients_ack() -> None:
    """Each answer leaves in two writes (headers, body): with Nagle's algorithm the body waits for the client's
    delayed ACK, about 40 ms on every keep-alive request, which scripted benches then book as server time."""
    with FakeLlama([]) as fake:
        accepted: list[socket.socket] = []
        get_request = fake.server.get_request

        def recording_get_request() -> tuple[socket.socket, Any]:
            connection, address = get_request()
            accepted.append(connection)
            return connection, address

        fake.server.get_request = recording_get_request  # type: ignore[method-assign]
        host, port = fake.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as client:
            client.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.recv(4096).startswith(b"HTTP/1.1 200")
            assert [c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0 for c in accepted] == [True]


def test_a_client_that_leaves_before_its_answer_is_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """An agent past its deadline closes the connection while the double still waits to answer: writing the answer
    then fails, quietly, as on the real server (it printed a traceback into whichever test ran next)."""
    with FakeLlama([{**fake_llama.prose("late"), "delay": 0.3}]) as fake:
        handled = threading.Event()  # the request's thread is done with it, error or not
        shutdown_request = fake.server.shutdown_request

        def shut(request: Any) -> None:
            shutdown_request(request)
            handled.set()

        fake.server.shutdown_request = shut  # type: ignore[method-assign]
        host, port = fake.url.removeprefix("http://").split(":")
        request = json.dumps(chat("hello")).encode()
        with socket.create_connection((host, int(port)), timeout=10) as client:
            head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(request)
            client.sendall(head + request)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closed with a reset
        assert handled.wait(10)
        assert len(fake.responses) == 1  # the answer was made, and its write found the connection gone
    assert capsys.readouterr().err == ""
