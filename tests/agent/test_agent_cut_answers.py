"""Every shape of a cut answer that llama-server produces, each handled as its preset says.

The bodies are those of the real server (notes/llama-server.md §9, this project's build b11434 on CPU): an answer
cut at the end of the window comes back as HTTP 200 with finish_reason "length", with a complete call, with a call
whose arguments are truncated JSON, or with the start of a call left in `content`; older builds answered an answer
cut inside a call with an HTTP 500 saying the output could not be parsed, in the wordings of agent/parse_failures.py.

part2 and clearing take a cut answer as the article's code did: its calls run (a call with truncated arguments
gets the tool's bad-arguments error, and goes back into the history as `{}`, which the server accepts), and prose
is taken as "done"; a 500 stops the run. part3 and the presets built on it drop it and send the article's note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fake_llama as fl
import pytest
from agent_helpers import run_agent
from fake_llama import FakeLlama

from agent import prompts
from agent.parse_failures import PARSE_FAILURES
from agent.server import ChatClient, TransportError, UnparsedOutput

N_CTX = 2048
TRUNCATED_ARGUMENTS = '{\n  "path": "todo.json",\n  "content'


def real_body(message: dict[str, Any], finish_reason: str = "length") -> dict[str, Any]:
    """A non-streamed chat completion as this llama-server build sends it, cut at the end of a 2048 window."""
    return {
        "choices": [{"finish_reason": finish_reason, "index": 0, "message": message}],
        "created": 1764500000,
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "system_fingerprint": "b0-unknown",
        "object": "chat.completion",
        "usage": {
            "completion_tokens": 40,
            "prompt_tokens": 2008,
            "total_tokens": N_CTX,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
        "id": "chatcmpl-cut",
        "timings": {"cache_n": 0, "prompt_n": 2008, "prompt_ms": 9000.0, "prompt_per_token_ms": 4.48,
                    "prompt_per_second": 223.1, "predicted_n": 40, "predicted_ms": 380.0,
                    "predicted_per_token_ms": 9.7, "predicted_per_second": 103.0},
    }  # fmt: skip


def call(name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}, "id": "aJ3kPq0vY7rT2mWx"}


COMPLETE_CALL = real_body({"role": "assistant", "content": "", "tool_calls": [call("read_file", '{"path":"calc.py"}')]})
TRUNCATED_CALL = real_body(
    {"role": "assistant", "content": "", "tool_calls": [call("write_file", TRUNCATED_ARGUMENTS)]}
)
PARTIAL_NAME = real_body({"role": "assistant", "content": "<function=read"})
OLD_500 = {"error": {"code": 500, "message": fl.OLD_PARSE_MESSAGE, "type": "server_error"}}
SHAPES = {
    "complete call": fl.raw(COMPLETE_CALL),
    "truncated arguments": fl.raw(TRUNCATED_CALL),
    "partial name in content": fl.raw(PARTIAL_NAME),
    "500 of older builds": fl.raw(OLD_500, status=500),
}


def run_shape(repo: Path, preset: str, shape: str) -> tuple[Any, list[dict[str, Any]]]:
    script = [SHAPES[shape], fl.prose("done")]
    with FakeLlama(script, n_ctx=N_CTX) as flint:
        run = run_agent(repo, flint.url, "--preset", preset, "--max-steps", "2")
        return run, flint.requests


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("preset", ["part3", "part3+", "strict"])
def test_part3_drops_every_shape_and_sends_the_note(repo: Path, preset: str, shape: str) -> None:
    run, requests = run_shape(repo, preset, shape)
    [cut] = run.of("cut")
    assert (cut["step"], cut["dropped"]) == (1, True)
    assert cut["kind"] == ("unparsed" if shape.startswith("500") else "length")
    assert requests[1]["messages"] == [
        *requests[0]["messages"],
        {"role": "user", "content": prompts.cut_off_note(N_CTX)},
    ]
    assert run.of("tool") == [] and not (repo / "todo.json").exists()


def test_part2_runs_the_complete_call_of_a_cut_answer(repo: Path) -> None:
    run, requests = run_shape(repo, "part2", "complete call")
    assert run.of("cut")[0]["dropped"] is False and run.of("tool")[0]["ok"]
    assert requests[1]["messages"][-1]["content"].startswith("def add")


@pytest.mark.parametrize("preset", ["part2", "clearing"])
def test_part2_gives_truncated_arguments_the_tools_error_and_sends_valid_json_back(repo: Path, preset: str) -> None:
    run, requests = run_shape(repo, preset, "truncated arguments")
    [tool] = run.of("tool")
    assert tool["name"] == "write_file" and not tool["ok"] and "not valid JSON" in tool["error"]
    assistant, result = requests[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"  # the server rejects invalid JSON in history
    assert "write_file{path, content}" in result["content"] and not (repo / "todo.json").exists()
    assert run.stop["reason"] == "done"  # the next answer, prose, passes the done check


@pytest.mark.parametrize("preset", ["part2", "clearing"])
def test_part2_takes_a_partial_call_in_content_as_done(repo: Path, preset: str) -> None:
    run, _ = run_shape(repo, preset, "partial name in content")
    assert run.of("cut")[0]["dropped"] is False and run.of("done_check")[0]["step"] == 1
    assert run.stop["reason"] == "done" and run.stop["steps"] == 1  # the article's fake "done"


def test_part2_stops_at_the_500_of_older_builds(repo: Path) -> None:
    run, _ = run_shape(repo, "part2", "500 of older builds")
    assert run.stop["reason"] == "server_error" and run.of("cut")[0]["kind"] == "unparsed"


# Messages as the throw sites in llama.cpp's sources compose them (agent/parse_failures.py has the sources).
PARSE_FAILURE_MESSAGES = [
    "The model produced output that does not match the expected peg-native format",
    "Failed to parse input at pos 131",
    'Failed to parse input at pos 131: <tool_call>\n{"name": "write_file", "arguments": {"pa',
    "Unexpected content at end of input",
    "Content path must be a string",
    'Failed to parse json tool call arguments: {"name": "read_file", "arguments": {"pa',
    "Malformed input, missing closing pattern: <tool_call>",
]
NOT_PARSE_FAILURES = [
    "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] unexpected end of input",
    "Failed to parse messages: Unsupported content part type",
    "Failed to parse due to missing parser definition.",
    "CUDA error: out of memory",
    "the model could not be parsed for some new reason",  # an unknown wording stays a transport error
]


def test_every_listed_wording_has_a_message_here() -> None:
    assert all(any(w.text in m for m in PARSE_FAILURE_MESSAGES) for w in PARSE_FAILURES)
    assert all(w.source for w in PARSE_FAILURES)


@pytest.mark.parametrize("message", PARSE_FAILURE_MESSAGES)
def test_a_500_in_any_known_wording_is_a_cut_that_part3_drops(repo: Path, message: str) -> None:
    with FakeLlama([fl.parse_failure(message=message), fl.prose("done")]) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
        second = flint.requests[1]["messages"]
    assert run.of("cut")[0] == {**run.of("cut")[0], "kind": "unparsed", "dropped": True, "message": message}
    assert second[-1]["content"] == prompts.cut_off_note(4096) and len(run.of("http_error")) == 1


@pytest.mark.parametrize("message", NOT_PARSE_FAILURES)
def test_other_500s_stay_transport_errors_and_are_retried(message: str) -> None:
    reply = fl.http_error(500, "server_error", message)
    body = {"messages": [{"role": "user", "content": "hi"}]}
    with FakeLlama([reply, fl.prose("fine")]) as fake:
        assert ChatClient(fake.url, timeout=10, retries=1, retry_delay=0.01).chat(body).message["content"] == "fine"
    with FakeLlama([reply]) as fake, pytest.raises(TransportError):
        ChatClient(fake.url, timeout=10).chat(body)


def test_a_parse_failure_is_not_retried() -> None:
    with FakeLlama([fl.parse_failure(message="Unexpected content at end of input")]) as fake:
        with pytest.raises(UnparsedOutput):
            ChatClient(fake.url, timeout=10, retries=3, retry_delay=0.01).chat({"messages": []})
        assert len(fake.requests) == 1


def test_the_bodies_are_what_the_notes_describe() -> None:
    arguments = TRUNCATED_CALL["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)
    assert PARTIAL_NAME["choices"][0]["message"] == {"role": "assistant", "content": "<function=read"}
    assert all(b["usage"]["total_tokens"] == N_CTX for b in (COMPLETE_CALL, TRUNCATED_CALL, PARTIAL_NAME))
