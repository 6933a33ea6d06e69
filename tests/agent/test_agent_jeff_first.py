"""The small model first (agent/jeff_first.py): jeff-first hands over to Flint at K steps or when Jeff says so,
jeff-gate asks Jeff each step who takes it."""

from __future__ import annotations

from pathlib import Path

from agent_helpers import AgentProcess, RunAgent

from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

READ = fl.tool_call("read_file", {"path": "calc.py"})


def test_jeff_first_hands_over_at_k(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama([], default=fl.prose("done")) as flint, FakeLlama([], default=READ) as jeff:
        run = run_agent(repo, flint.url, "--preset", "jeff-first", "--jeff", jeff.url, "--jeff-steps", "2")
    assert [(e["step"], e["kind"]) for e in run.of("jeff_step")] == [(1, "act"), (2, "act")]
    assert [(e["step"], e["reason"], e["jeff_steps"]) for e in run.of("escalate")] == [(3, "steps", 2)]
    assert [e["step"] for e in run.of("response")] == [3] and run.stop["reason"] == "done"
    first = flint.requests[0]["messages"]  # Flint sees Jeff's two calls and their results as the run's own
    assert [m["role"] for m in first[2:]] == ["assistant", "tool", "assistant", "tool"]
    assert len(jeff.requests) == 2 and (run.events[0]["jeff_steps"], run.events[0]["jeff_n_ctx"]) == (2, 4096)


def test_jeff_first_hands_over_when_jeff_says_so(run_agent: RunAgent, repo: Path) -> None:
    with (
        FakeLlama([READ, fl.prose("done")]) as flint,
        FakeLlama([READ, fl.prose("This needs the large model.")], default=READ) as jeff,
    ):
        run = run_agent(repo, flint.url, "--preset", "jeff-first", "--jeff", jeff.url)
    assert [(e["step"], e["reason"], e["jeff_steps"]) for e in run.of("escalate")] == [(2, "jeff_said", 1)]
    assert [e["step"] for e in run.of("response")] == [2, 3]  # and Flint keeps every later step
    assert len(jeff.requests) == 2  # Jeff's prose is not added to the conversation
    assert all(m.get("content") != "This needs the large model." for m in flint.requests[-1]["messages"])


def test_jeff_gate_asks_jeff_each_step_who_takes_it(run_agent: RunAgent, repo: Path) -> None:
    script = [fl.prose("jeff"), READ, fl.prose("flint"), fl.prose("Jeff."), fl.prose("I cannot.")]
    with FakeLlama([READ, fl.prose("done")]) as flint, FakeLlama(script, default=fl.prose("flint")) as jeff:
        run = run_agent(repo, flint.url, "--preset", "jeff-gate", "--jeff", jeff.url)
    acted = [(e["step"], e["kind"]) for e in run.of("jeff_step")]
    assert acted == [(1, "gate"), (1, "act"), (2, "gate"), (3, "gate"), (3, "act")]
    assert [(e["step"], e["reason"]) for e in run.of("escalate")] == [(2, "gate"), (3, "jeff_said")]
    assert [e["step"] for e in run.of("response")] == [2, 3]
    gate = jeff.requests[2]  # the short state: the task's start and the newest message's end, not the conversation
    assert len(gate["messages"]) == 2 and gate["messages"][1]["content"].startswith("Task (start): Add sub")


def test_jeff_first_without_jeff_is_a_usage_error(agent_process: AgentProcess, repo: Path) -> None:
    done = agent_process(["--repo", str(repo), "--task", "t", "--preset", "jeff-first", "--no-jeff"])
    assert done.returncode == 2 and "has Jeff take steps: pass --jeff URL" in done.stderr
