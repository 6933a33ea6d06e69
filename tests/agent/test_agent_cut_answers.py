"""Every shape of a cut answer that llama-server produces, each handled as its preset says.

The bodies are the real server's (this project's build b11434 on CPU, captured by tests/cut_bodies.py into
data/cut_bodies.json, and checked against the live server by tests/integration/test_cut_bodies_real.py): an answer
cut at the end of the window comes back as HTTP 200 with finish_reason "length", with a complete call, with a call
whose arguments are truncated JSON, or with the start of a call left in `content`. An answer the server cannot parse
comes back as an HTTP 500: this build says so for prose under the forced-tools template, and older builds (the
article's) said so for an answer cut inside a call, in the wordings of agent/parse_failures.py.

part2 and clearing take a cut answer as the article's code did: its calls run (a call with truncated arguments
gets the tool's bad-arguments error, and goes back into the history as `{}`, which the server accepts), and prose
is taken as "done"; a 500 stops the run. part3 and the presets built on it drop it and send the article's note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import RunAgent

from agent import prompts
from agent.parse_failures import PARSE_FAILURES, is_parse_failure
from agent.server import ChatClient, TransportError, UnparsedOutput
from agent.tools import signature
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

REAL = json.loads((Path(__file__).parent / "data" / "cut_bodies.json").read_text())
COMPLETE_CALL = REAL["complete call"]
TRUNCATED_CALL = REAL["truncated arguments"]
PARTIAL_NAME = REAL["partial name in content"]
PROSE_500 = REAL["500 of the template without grammar"]
CAPTURED_CTX = COMPLETE_CALL["usage"]["total_tokens"]  # each cut answer ends exactly at the end of the window
N_CTX = 2048  # the window the fake server reports: room for the conversation to go on after the cut
OLD_500 = {"error": {"code": 500, "message": fl.OLD_PARSE_MESSAGE, "type": "server_error"}}
SHAPES = {
    "complete call": fl.raw(COMPLETE_CALL),
    "truncated arguments": fl.raw(TRUNCATED_CALL),
    "partial name in content": fl.raw(PARTIAL_NAME),
    "500 of this build": fl.raw(PROSE_500, status=500),
    "500 of older builds": fl.raw(OLD_500, status=500),
}


def first_call(body: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = body["choices"][0]["message"]["tool_calls"][0]["function"]
    return function


def run_shape(run_agent: RunAgent, repo: Path, preset: str, shape: str) -> tuple[Any, list[dict[str, Any]]]:
    script = [SHAPES[shape], fl.prose("done")]
    with FakeLlama(script, n_ctx=N_CTX) as flint:
        run = run_agent(repo, flint.url, "--preset", preset, "--max-steps", "2")
        return run, flint.requests


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("preset", ["part3", "part3+", "strict"])
def test_part3_drops_every_shape_and_sends_the_note(run_agent: RunAgent, repo: Path, preset: str, shape: str) -> None:
    run, requests = run_shape(run_agent, repo, preset, shape)
    [cut] = run.of("cut")
    assert (cut["step"], cut["dropped"]) == (1, True)
    assert cut["kind"] == ("unparsed" if shape.startswith("500") else "length")
    assert requests[1]["messages"] == [
        *requests[0]["messages"],
        {"role": "user", "content": prompts.cut_off_note(N_CTX)},
    ]
    assert run.of("tool") == [] and not (repo / "todo.json").exists()


def test_part2_runs_the_complete_call_of_a_cut_answer(run_agent: RunAgent, repo: Path) -> None:
    run, requests = run_shape(run_agent, repo, "part2", "complete call")
    call = first_call(COMPLETE_CALL)
    [tool] = run.of("tool")
    assert run.of("cut")[0]["dropped"] is False
    assert (tool["name"], tool["args"]) == (call["name"], json.loads(call["arguments"]))
    assert requests[1]["messages"][-1]["role"] == "tool"


@pytest.mark.parametrize("preset", ["part2", "clearing"])
def test_part2_gives_truncated_arguments_the_tools_error_and_sends_valid_json_back(
    run_agent: RunAgent, repo: Path, preset: str
) -> None:
    run, requests = run_shape(run_agent, repo, preset, "truncated arguments")
    name = first_call(TRUNCATED_CALL)["name"]
    [tool] = run.of("tool")
    assert tool["name"] == name and not tool["ok"] and "not valid JSON" in tool["error"]
    assistant, result = requests[1]["messages"][-2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"  # the server rejects invalid JSON in history
    assert signature(name) in result["content"]
    assert run.stop["reason"] == "done"  # the next answer, prose, passes the done check


@pytest.mark.parametrize("preset", ["part2", "clearing"])
def test_part2_takes_a_partial_call_in_content_as_done(run_agent: RunAgent, repo: Path, preset: str) -> None:
    run, _ = run_shape(run_agent, repo, preset, "partial name in content")
    assert run.of("cut")[0]["dropped"] is False and run.of("done_check")[0]["step"] == 1
    assert run.stop["reason"] == "done" and run.stop["steps"] == 1  # the article's fake "done"


@pytest.mark.parametrize("shape", ["500 of this build", "500 of older builds"])
def test_part2_stops_at_a_500(run_agent: RunAgent, repo: Path, shape: str) -> None:
    run, _ = run_shape(run_agent, repo, "part2", shape)
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
    "Failed to parse tool call",  # not a listed wording: every other "Failed to parse" of the output counts too
    "Failed to parse tool call: unexpected end of input",
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
def test_a_500_in_any_known_wording_is_a_cut_that_part3_drops(run_agent: RunAgent, repo: Path, message: str) -> None:
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


def test_the_real_bodies_are_the_shapes_the_notes_describe() -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(first_call(TRUNCATED_CALL)["arguments"])
    assert json.loads(first_call(COMPLETE_CALL)["arguments"])
    partial = PARTIAL_NAME["choices"][0]["message"]
    assert partial["content"].startswith("<function=") and not partial.get("tool_calls")
    for body in (COMPLETE_CALL, TRUNCATED_CALL, PARTIAL_NAME):
        assert body["choices"][0]["finish_reason"] == "length" and body["usage"]["total_tokens"] == CAPTURED_CTX
    assert is_parse_failure(500, PROSE_500["error"]["message"])
