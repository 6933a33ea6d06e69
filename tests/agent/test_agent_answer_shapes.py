"""Whatever a server sends, the agent ends with a clear reason and never a traceback, and its trace stays readable.

The answers come over real HTTP from the scripted server. The done check is replaced by one that always says "not
done" in the generated test, so that each example costs milliseconds instead of a pytest run; the done check has
tests of its own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from agent_helpers import CALC, TEST_CALC, RunAgent
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

from agent.done import DoneResult
from agent.trace import MAX_LINE_BYTES
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

STOP_REASONS = {"done", "step_limit", "server_error", "context_exhausted"}  # `interrupted` would mean a crash
READ = {"path": "calc.py"}


def answer_body(message: Any, **outer: Any) -> dict[str, Any]:
    """A chat completion around `message`, with usual usage and timings unless `outer` replaces them."""
    body = {
        "choices": [{"finish_reason": "tool_calls", "index": 0, "message": message}],
        "usage": {"completion_tokens": 10, "prompt_tokens": 100, "total_tokens": 110},
        "timings": {"cache_n": 0, "prompt_n": 100},
    }
    return {**body, **outer}


def send(body: Any, status: int = 200) -> fl.Reply:
    """The body as JSON text, NaN and all (the scripted server would try to count the timings of a raw reply)."""
    return fl.raw_text(json.dumps(body), status)


def call_message(arguments: Any, name: Any = "read_file") -> dict[str, Any]:
    call = {"type": "function", "id": "c1", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def strict_json(line: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(line, parse_constant=refuse)


def run_with(run_agent: RunAgent, repo: Path, replies: list[fl.Reply], *extra: str) -> list[dict[str, Any]]:
    """Run the agent on `replies` (then read_file calls); check what every run must hold; return the trace."""
    not_done = DoneResult(False, 1, "1 failed", feedback="The tests do not pass.")
    default = fl.tool_call("read_file", READ)
    with FakeLlama(replies, default=default) as flint, mock.patch("agent.loop.check_done", return_value=not_done):
        argv = ("--max-steps", "3", "--retries", "1", "--retry-delay", "0", *extra)
        run = run_agent(repo, flint.url, *argv)
    lines = (repo.parent / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert all(len(line.encode()) <= MAX_LINE_BYTES for line in lines)
    events = [strict_json(line) for line in lines]
    stop = events[-1]
    assert stop["event"] == "stop" and stop["reason"] in STOP_REASONS, stop
    assert run.exit_code in (0, 1)
    if stop["reason"] == "server_error":
        assert isinstance(stop["message"], str) and stop["message"]
    return events


# The shapes from the issue, one by one.
SHAPES = {
    "tool_calls is a number": send(answer_body({"role": "assistant", "content": "", "tool_calls": 5})),
    "content is a number": send(answer_body({"role": "assistant", "content": 123})),
    "usage is text": send(answer_body(call_message(json.dumps(READ)), usage="lots")),
    "usage nested 981 deep": fl.raw_text(
        '{"choices": [{"finish_reason": "stop", "message": {"content": "hi"}}], "usage": ' + "[" * 981 + "]" * 981 + "}"
    ),
    "a body nested 5000 deep": fl.raw_text("[" * 5000 + "]" * 5000),
    "arguments nested 5000 deep": send(answer_body(call_message('{"path": ' + "[" * 5000 + "]" * 5000 + "}"))),
    "offset 1e400": send(answer_body(call_message('{"path": "calc.py", "offset": 1e400}'))),
    "offset NaN": send(answer_body(call_message('{"path": "calc.py", "offset": NaN}'))),
    "offset a huge integer": send(answer_body(call_message('{"path": "calc.py", "offset": 1' + "0" * 400 + "}"))),
    "offset a superscript digit": send(answer_body(call_message({"path": "calc.py", "offset": "²"}))),
    "a lone surrogate in the path": send(answer_body(call_message('{"path": "calc\\ud800.py"}'))),
    "a lone surrogate in the content": fl.raw_text(
        '{"choices": [{"finish_reason": "stop", "message": {"content": "x\\udc00y"}}]}'
    ),
    "usage with NaN and huge numbers": fl.raw_text(
        '{"choices": [{"finish_reason": "stop", "message": {"content": "hi"}}], '
        '"usage": {"total_tokens": NaN, "prompt_tokens": 1e308, "completion_tokens": -5}}'
    ),
    "finish_reason is a list": send(
        {"choices": [{"finish_reason": ["length"], "message": {"role": "assistant", "content": "x"}}]}
    ),
    "a huge error message": fl.http_error(500, "server_error", "x" * 2_000_000),
    "a 400 with a nested n_prompt_tokens": send(
        {"error": {"type": "exceed_context_size_error", "n_prompt_tokens": {"a": [1, {"b": None}]}}}, status=400
    ),
    "not JSON": fl.raw_text("<html>502</html>"),
}


@pytest.mark.parametrize("reply", list(SHAPES.values()), ids=list(SHAPES))
def test_each_published_shape_ends_with_a_clear_reason(run_agent: RunAgent, repo: Path, reply: fl.Reply) -> None:
    events = run_with(run_agent, repo, [reply, reply])
    assert any(e["event"] in ("response", "http_error") for e in events)


def test_a_deep_usage_is_recorded_bounded_and_says_so(run_agent: RunAgent, repo: Path) -> None:
    deep: Any = "bottom"
    for _ in range(40):
        deep = [deep]
    body = answer_body(call_message(json.dumps(READ)), usage={"total_tokens": 5, "details": deep})
    response = run_with(run_agent, repo, [send(body)])[1]
    assert response["event"] == "response" and "usage" in response["trimmed"]
    assert "nested deeper than" in json.dumps(response["usage"])


def test_a_bad_argument_number_is_told_to_the_model_and_the_run_goes_on(run_agent: RunAgent, repo: Path) -> None:
    events = run_with(run_agent, repo, [SHAPES["offset 1e400"]])
    tools = [e for e in events if e["event"] == "tool"]
    assert tools[0]["error"] and "'offset' is not a whole number" in tools[0]["error"]
    assert tools[1]["ok"] and events[-1]["reason"] == "step_limit"


# Generated shapes: any JSON value, with huge and non-finite numbers and lone surrogates, put anywhere in an answer.
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ARGUMENT_TEXTS = st.one_of(
    VALUES.map(lambda v: json.dumps(v)),
    st.dictionaries(st.sampled_from(["path", "offset", "limit", "char_offset", "content", "command"]), VALUES).map(
        json.dumps
    ),
    st.sampled_from(['{"path": "calc.py", "offset": 1e400}', '{"path": "\\ud800"}', "[" * 3000, '{"path": "calc.py"']),
)
PLACES = [
    "body",
    "choices",
    "choice",
    "message",
    "content",
    "tool_calls",
    "call",
    "function",
    "name",
    "arguments",
    "usage",
    "timings",
    "finish_reason",
    "id",
]


@st.composite
def replies(draw: st.DrawFn) -> fl.Reply:
    kind = draw(st.sampled_from(["shape", "shape", "shape", "arguments", "text", "error"]))
    if kind == "arguments":
        name = draw(st.sampled_from(["read_file", "write_file", "edit_file", "run", "nope"]))
        return send(answer_body(call_message(draw(ARGUMENT_TEXTS), name)))
    if kind == "text":
        return fl.raw_text(draw(st.sampled_from(["", "null", "[]", "{", "[" * 3000, '{"choices": [{}]}', "\ud800"])))
    if kind == "error":
        return send({"error": draw(VALUES)}, status=draw(st.sampled_from([400, 404, 500, 503])))
    return send(replace_part(draw(st.sampled_from(PLACES)), draw(VALUES)))


def replace_part(place: str, value: Any) -> Any:
    """A good answer calling read_file, with the part at `place` replaced by `value`."""
    function = {"name": "read_file", "arguments": json.dumps(READ)}
    call = {"type": "function", "id": "c1", "function": function}
    message = {"role": "assistant", "content": "", "tool_calls": [call]}
    choice = {"finish_reason": "tool_calls", "index": 0, "message": message}
    body = {"choices": [choice], "usage": {"total_tokens": 110}, "timings": {"prompt_n": 100}}
    where = {
        "name": function,
        "arguments": function,
        "id": call,
        "function": call,
        "content": message,
        "tool_calls": message,
        "message": choice,
        "finish_reason": choice,
        "choices": body,
        "usage": body,
        "timings": body,
    }
    if place == "call":
        message["tool_calls"] = [value]
    elif place == "choice":
        body["choices"] = [value]
    elif place == "body":
        return value if isinstance(value, dict) else {"choices": value}
    else:
        where[place][place] = value
    return body


@pytest.fixture(scope="module")
def shared_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("shapes") / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    return repo


@examples(60)
@given(st.lists(replies(), min_size=1, max_size=2), st.sampled_from(["part2", "part3", "strict"]))
def test_any_answer_ends_with_a_clear_reason(
    run_agent: RunAgent, shared_repo: Path, script: list[fl.Reply], preset: str
) -> None:
    events = run_with(run_agent, shared_repo, script, "--preset", preset)
    assert not any(isinstance(v, float) and not math.isfinite(v) for e in events for v in e.values())
