"""The llama-server client: reading /props, and sorting every failure by what the loop should do about it."""

from __future__ import annotations

import functools
import json
import threading
import tracemalloc
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.server import (
    ChatClient,
    ContextOverflow,
    RequestRejected,
    ServerError,
    SetupError,
    TransportError,
    UnparsedOutput,
    _decode,
    read_props,
)
from bench.llama.process import free_port
from bench.testing import fake_llama
from bench.testing.fake_llama import FakeLlama

BODY = {"messages": [{"role": "user", "content": "hi"}]}


def client(fake: FakeLlama, retries: int = 0, timeout: float = 10) -> ChatClient:
    return ChatClient(fake.url, timeout=timeout, retries=retries, retry_delay=0.01)


def test_props_give_the_window_model_and_build() -> None:
    with FakeLlama(n_ctx=8192, build_info="b11434-xyz", supports_tool_calls=False) as fake:
        props = read_props(fake.url + "/")
    assert (props.n_ctx, props.build, props.supports_tool_calls) == (8192, "b11434-xyz", False)
    assert props.model == "fake-flint.gguf"


def test_an_unreachable_server_is_a_setup_error_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SetupError) as caught:
        read_props(url)
    assert f"{url}/props" in str(caught.value) and "\n" not in str(caught.value)


def test_a_reply_keeps_usage_timings_and_finish_reason_as_sent() -> None:
    with FakeLlama([fake_llama.tool_call("read_file", {"path": "a.py"})]) as fake:
        reply = client(fake).chat(BODY)
        sent = fake.responses[0]
    assert reply.usage == sent["usage"] and reply.timings == sent["timings"]
    assert reply.finish_reason == "tool_calls" == sent["choices"][0]["finish_reason"]
    assert reply.message == sent["choices"][0]["message"]


def test_the_context_error_carries_the_prompt_size_and_window() -> None:
    with FakeLlama([fake_llama.context_error()], n_ctx=4096) as fake, pytest.raises(ContextOverflow) as caught:
        client(fake, retries=3).chat(BODY)
    assert caught.value.status == 400 and caught.value.type == "exceed_context_size_error"
    assert caught.value.extra["n_ctx"] == 4096 and caught.value.extra["n_prompt_tokens"] > 0
    assert len(fake.requests) == 1  # not retried: the same request would fail the same way


@pytest.mark.parametrize("old", [True, False])
def test_both_generations_of_the_parse_failure_are_unparsed_output(old: bool) -> None:
    with FakeLlama([fake_llama.parse_failure(old=old)]) as fake, pytest.raises(UnparsedOutput) as caught:
        client(fake, retries=3).chat(BODY)
    assert caught.value.status == 500 and len(fake.requests) == 1
    assert caught.value.message == (fake_llama.OLD_PARSE_MESSAGE if old else fake_llama.NEW_PARSE_MESSAGE)


@pytest.mark.parametrize(
    ("reply", "status", "kind"),
    [
        (fake_llama.http_error(500, "server_error", "CUDA error: out of memory"), 500, "server_error"),
        (fake_llama.loading(), 503, "unavailable_error"),
        (fake_llama.non_json(), 200, "bad_body"),
        (fake_llama.truncated_body(), None, "bad_body"),
        (fake_llama.drop_connection(), None, "connection"),
    ],
)
def test_transport_failures_are_retried_and_reported_attempt_by_attempt(
    reply: fake_llama.Reply, status: int | None, kind: str
) -> None:
    seen: list[tuple[str, int]] = []
    with FakeLlama([reply, reply, fake_llama.prose("finally")]) as fake:
        answer = client(fake, retries=2).chat(BODY, on_error=lambda e, attempt: seen.append((e.type, attempt)))
    assert answer.message["content"] == "finally"
    assert seen == [(kind, 1), (kind, 2)]
    with FakeLlama([reply]) as fake, pytest.raises(TransportError) as caught:
        client(fake).chat(BODY)
    assert (caught.value.status, caught.value.type) == (status, kind)


def test_retries_end_with_the_last_transport_error() -> None:
    attempts: list[int] = []
    with FakeLlama([fake_llama.drop_connection()] * 5) as fake, pytest.raises(TransportError):
        client(fake, retries=3).chat(BODY, on_error=lambda e, attempt: attempts.append(attempt))
    assert attempts == [1, 2, 3, 4] and len(fake.requests) == 4


def test_a_slow_answer_is_a_timeout() -> None:
    slow = {**fake_llama.prose("late"), "delay": 3}
    with FakeLlama([slow]) as fake, pytest.raises(TransportError) as caught:
        client(fake, timeout=0.3).chat(BODY)
    assert caught.value.type == "timeout"


def test_other_client_errors_are_rejected_without_retrying() -> None:
    bad = fake_llama.http_error(400, "invalid_request_error", "Failed to parse messages: bad role")
    with FakeLlama([bad]) as fake, pytest.raises(RequestRejected) as caught:
        client(fake, retries=3).chat(BODY)
    assert caught.value.message == "Failed to parse messages: bad role" and len(fake.requests) == 1
    assert isinstance(caught.value, ServerError)


@pytest.mark.parametrize(("props", "said"), [("{}", "has no default_generation_settings.n_ctx"), (None, "HTTP 404")])
def test_a_server_that_is_not_llama_server_is_a_setup_error(tmp_path: Path, props: str | None, said: str) -> None:
    if props is not None:
        (tmp_path / "props").write_text(props)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        with pytest.raises(SetupError) as caught:
            read_props(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert said in str(caught.value) and "/props" in str(caught.value)


@pytest.mark.parametrize("filler", [b"[]", b"{}", b"1.5", b'"x"'])
def test_an_answer_of_millions_of_small_values_is_refused_before_it_is_decoded(filler: bytes) -> None:
    """Bounded in values, not only in bytes: 8 MB of `[],` decoded into two million lists took 180 MB."""
    raw = b'{"choices": [' + b",".join([filler] * 2_000_000) + b"]}"
    tracemalloc.start()
    try:
        with pytest.raises(TransportError, match="more than 100000 values"):
            _decode(raw, "http://flint")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 << 20, peak


def test_text_full_of_commas_and_brackets_is_one_value() -> None:
    text = 'a, [b], {c}, "d" \\ ' * 100_000
    raw = json.dumps({"choices": [{"message": {"content": text}}]}).encode()
    assert _decode(raw, "http://flint")["choices"][0]["message"]["content"] == text
