"""The event trace: exactly the fields of docs/internals.md, server numbers verbatim, and the agent's version."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_helpers import RunAgent

from agent.trace import Trace, agent_version
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

FIELDS = {
    "start": {
        "preset",
        "n_ctx",
        "flint",
        "jeff",
        "jeff_timeout",
        "request_timeout",
        "flint_model",
        "flint_build",
        "supports_tool_calls",
        "keep",
        "clear_at",
        "max_steps",
        "jeff_steps",
        "jeff_n_ctx",
        "approve",
        "sampling",
        "agent_version",
        "unreadable",
    },
    "response": {
        "step",
        "usage",
        "timings",
        "finish_reason",
        "tool_calls",
        "content_chars",
        "reasoning_chars",
        "messages",
        "request",
        "changed_from",
    },
    "cut": {"step", "kind", "dropped", "message"},
    "http_error": {"step", "status", "type", "message", "messages", "request", "changed_from"},
    "clear": {"step", "reason", "total_tokens", "changed", "freed_chars"},
    "tool": {"step", "name", "args", "ok", "result_chars", "truncated", "refused", "error", "seconds"},
    "jeff": {"step", "command", "opinion", "seconds", "usage", "timings", "error"},
    "approval": {"step", "command", "decision", "by"},
    "done_check": {"step", "passed", "pytest_exit", "summary", "missing", "planted", "new_tests", "seconds"},
    "restored": {"step", "after", "files"},
    "stop": {"reason", "steps", "message"},
}
HTTP_ERROR_EXTRAS = {"n_prompt_tokens", "n_ctx", "attempt"}


def eventful_run(run_agent: RunAgent, repo: Path) -> tuple[list[dict], list[dict]]:
    """A strict run that produces every kind of event; returns the trace and what the server sent."""
    script = [
        fl.tool_call("read_file", {"path": "calc.py"}, reasoning="Look first."),
        fl.tool_call("run", {"command": "ls"}),
        fl.tool_call("run", {"command": "wc -l calc.py"}),
        fl.tool_call("run", {"command": "echo overwritten > test_calc.py"}),
        fl.drop_connection(),
        fl.context_error(),
        fl.length_cut("Thinking about it"),
        fl.prose("Done?"),
        fl.tool_call("write_file", {"path": "test_sub.py", "content": "def test_sub():\n    pass\n"}),
        fl.tool_call("edit_file", {"path": "calc.py", "old": "a + b", "new": "b + a"}),
        fl.prose("Done."),
    ]
    with FakeLlama(script, n_ctx=8192) as flint, FakeLlama([fl.prose("yes")] * 3) as jeff:
        run = run_agent(repo, flint.url, "--preset", "strict", "--jeff", jeff.url, "--keep", "1", "--approve", "yes")
        return run.events, flint.responses


def test_every_event_has_exactly_the_documented_fields(run_agent: RunAgent, repo: Path) -> None:
    events, _ = eventful_run(run_agent, repo)
    assert {e["event"] for e in events} == set(FIELDS)
    for event in events:
        fields = set(event) - {"t", "event"}
        if event["event"] == "http_error":
            assert FIELDS["http_error"] <= fields <= FIELDS["http_error"] | HTTP_ERROR_EXTRAS
        else:
            assert fields == FIELDS[event["event"]], event["event"]
    assert events[0]["event"] == "start" and events[-1] == {**events[-1], "reason": "done", "steps": 9}


def test_usage_timings_and_finish_reason_are_the_servers_own(run_agent: RunAgent, repo: Path) -> None:
    events, served = eventful_run(run_agent, repo)
    responses = [e for e in events if e["event"] == "response"]
    assert len(responses) == len(served) == 9  # the dropped connection and the 400 served no answer
    for event, body in zip(responses, served, strict=True):
        assert event["usage"] == body["usage"] and event["timings"] == body["timings"]
        assert event["finish_reason"] == body["choices"][0]["finish_reason"]


def test_steps_count_requests_that_got_an_answer_or_a_cut(run_agent: RunAgent, repo: Path) -> None:
    events, _ = eventful_run(run_agent, repo)
    steps = [e["step"] for e in events if e["event"] == "response"]
    assert steps == list(range(1, 10))  # a dropped connection, a 400 and the cut answer all belong to step 5
    assert [(e["event"], e["step"]) for e in events if e["event"] in ("http_error", "cut")] == [
        ("http_error", 5),
        ("http_error", 5),
        ("cut", 5),
    ]


def test_the_version_is_a_hash_of_the_sources(tmp_path: Path) -> None:
    copy = tmp_path / "agent"
    shutil.copytree(Path(agent_version.__code__.co_filename).parent, copy)
    assert agent_version(copy) == agent_version() and len(agent_version()) == 12
    (copy / "loop.py").write_text((copy / "loop.py").read_text() + "\n# changed\n")
    assert agent_version(copy) != agent_version()


def test_each_line_is_on_disk_as_soon_as_it_is_emitted(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    trace = Trace(path)
    trace.emit("start", preset="part3")
    assert path.read_text().count("\n") == 1  # flushed, not waiting for close
    trace.emit("stop", reason="done", steps=0, message=None)
    trace.close()
    assert trace.stopped and path.read_text().count("\n") == 2
