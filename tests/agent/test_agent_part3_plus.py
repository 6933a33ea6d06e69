"""part3+ fixes what the article left open, measured against part3 on the same scripted runs.

- The output of failed done checks is cleared like tool output (only the newest is kept): part3 lets it pile up
  until the window is exhausted.
- An answer that is dropped does not trigger a clearing: part3 clears because the cut answer ran to the window's
  end, although the conversation that stays is small.
- A request that would pass the threshold is cleared before it is sent: part3 sends it, and clears after.
And on a scripted run that fills the window, part3+ makes the server reprocess no more tokens than part3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_helpers import CALC, Run, RunAgent

from agent.clearing import is_placeholder
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

BROKEN = "def add(a, b):\n    return a - b\n"


def read(path: str) -> fl.Reply:
    return fl.tool_call("read_file", {"path": path})


def agent_run(
    run_agent: RunAgent, repo: Path, preset: str, script: list[fl.Reply], n_ctx: int, max_steps: int
) -> tuple[Run, FakeLlama]:
    with FakeLlama(script, n_ctx=n_ctx, default=fl.prose("I am done.")) as flint:
        run = run_agent(repo, flint.url, "--preset", preset, "--max-steps", str(max_steps))
    return run, flint


def big_file(repo: Path, name: str, lines: int) -> None:
    (repo / name).write_text(
        "".join(f"RECORD_{i} = {i * 7}  # a line of filler to take up room\n" for i in range(lines))
    )


def test_done_check_output_piles_up_in_part3_and_is_cleared_in_part3_plus(run_agent: RunAgent, repo: Path) -> None:
    (repo / "calc.py").write_text(BROKEN)  # every done check fails, and its output goes back to the model
    part3, _ = agent_run(run_agent, repo, "part3", [], n_ctx=1536, max_steps=10)
    plus, flint = agent_run(run_agent, repo, "part3+", [], n_ctx=1536, max_steps=10)
    assert part3.stop["reason"] == "context_exhausted" and part3.stop["steps"] < 10
    assert plus.stop["reason"] == "step_limit" and len(plus.of("done_check")) == 10
    feedback = [m["content"] for m in flint.requests[-1]["messages"] if m["role"] == "user"][1:]
    assert all(is_placeholder(f) and "test output from an earlier done check" in f for f in feedback[:-1])
    assert "assert -1 == 3" in feedback[-1]  # the newest is kept whole


def test_a_dropped_answer_does_not_clear_in_part3_plus(run_agent: RunAgent, repo: Path) -> None:
    script = [read("calc.py"), read("calc.py"), read("calc.py"), fl.length_cut("thinking " * 50), fl.prose("done")]
    part3, _ = agent_run(run_agent, repo, "part3", script, n_ctx=4096, max_steps=5)
    plus, _ = agent_run(run_agent, repo, "part3+", script, n_ctx=4096, max_steps=5)
    [cut3] = part3.of("cut")
    assert [(c["step"], c["changed"] > 0) for c in part3.of("clear")] == [(cut3["step"], True)]
    assert plus.of("cut")[0]["dropped"] and plus.of("clear") == []  # what stays is far below half the window


def test_a_request_past_the_threshold_is_cleared_before_it_is_sent(run_agent: RunAgent, repo: Path) -> None:
    big_file(repo, "first.py", 50)
    big_file(repo, "second.py", 50)
    script = [read("first.py"), read("calc.py"), read("second.py"), read("calc.py"), fl.prose("done")]
    part3, flint3 = agent_run(run_agent, repo, "part3", script, n_ctx=3072, max_steps=5)
    plus, flint_plus = agent_run(run_agent, repo, "part3+", script, n_ctx=3072, max_steps=5)
    half = 3072 / 2
    # part3 sends the request that holds both files past half the window, and clears after its answer
    sent3 = [r["usage"]["prompt_tokens"] for r in flint3.responses]
    assert max(sent3) > half and part3.of("clear")[0]["reason"] == "threshold"
    # part3+ estimates that request first, clears, and sends it below half
    [clear] = [c for c in plus.of("clear") if c["changed"] > 0]
    assert clear["reason"] == "before_send" and clear["total_tokens"] > half
    step = clear["step"]
    assert flint_plus.responses[step - 1]["usage"]["prompt_tokens"] < half
    assert any(is_placeholder(m["content"]) for m in flint_plus.requests[step - 1]["messages"] if m["role"] == "tool")


def filling_script(repo: Path) -> list[fl.Reply]:
    """A conversation that fills a 4096-token window several times over: reads of large files, commands with long
    output, answers cut at the window's end, and done checks that fail."""
    big_file(repo, "ledger.py", 70)
    big_file(repo, "report.py", 50)
    (repo / "calc.py").write_text(BROKEN)
    fix = fl.tool_call("edit_file", {"path": "calc.py", "old": "a - b", "new": "a + b"})
    return [
        read("calc.py"),
        read("ledger.py"),
        fl.tool_call("run", {"command": "cat report.py"}),
        read("test_calc.py"),
        fl.prose("I think it is done."),
        read("ledger.py"),
        fl.length_cut("Let me think about this " * 40),
        read("report.py"),
        fl.prose("Done now?"),
        fl.tool_call("run", {"command": "grep -n RECORD_1 ledger.py"}),
        read("ledger.py"),
        fl.length_cut("Considering the records " * 40),
        read("calc.py"),
        fl.prose("Finished."),
        read("report.py"),
        read("ledger.py"),
        fix,
        fl.prose("Fixed."),
    ]


def reprocessed(run_agent: RunAgent, preset: str, repo: Path) -> tuple[int, dict[str, Any]]:
    run, flint = agent_run(run_agent, repo, preset, filling_script(repo), n_ctx=4096, max_steps=30)
    (repo / "calc.py").write_text(CALC)
    counts = {
        "stop": run.stop["reason"],
        "steps": run.stop["steps"],
        "clearings": sum(1 for c in run.of("clear") if c["changed"] > 0),
        "context_400s": sum(1 for e in run.of("http_error") if e["status"] == 400),
    }
    return int(flint.counters["prompt_tokens_total"]), counts


def test_part3_plus_reprocesses_no_more_than_part3_on_a_run_that_fills_the_window(
    run_agent: RunAgent, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens3, counts3 = reprocessed(run_agent, "part3", repo)
    tokens_plus, counts_plus = reprocessed(run_agent, "part3+", repo)
    with capsys.disabled():
        print(f"\nreprocessed tokens (sum of timings.prompt_n): part3 {tokens3} {counts3}")
        print(f"reprocessed tokens (sum of timings.prompt_n): part3+ {tokens_plus} {counts_plus}")
    assert counts3["clearings"] > 0 and counts_plus["clearings"] > 0  # the window really filled in both
    assert tokens_plus <= tokens3


def test_late_clears_before_sending_only_past_three_quarters_of_the_window(run_agent: RunAgent, repo: Path) -> None:
    """late is part3+ at 0.75 of the window, whatever --clear-at says: a request part3+ clears at half the window
    goes out whole, and the clearing comes once the estimate passes three quarters."""
    for name in ("first.py", "second.py", "third.py"):
        big_file(repo, name, 50)
    script = [read("first.py"), read("second.py"), read("third.py"), read("calc.py"), fl.prose("done")]
    plus, _ = agent_run(run_agent, repo, "part3+", script, n_ctx=4096, max_steps=5)
    late, flint = agent_run(run_agent, repo, "late", script, n_ctx=4096, max_steps=5)
    assert late.of("start")[0]["clear_at"] == 0.75 and plus.of("start")[0]["clear_at"] == 0.5
    first_plus = min(c["step"] for c in plus.of("clear") if c["changed"])
    cleared = [c for c in late.of("clear") if c["changed"]]
    assert all(c["reason"] == "before_send" and c["total_tokens"] > 0.75 * 4096 for c in cleared)
    assert not cleared or min(c["step"] for c in cleared) > first_plus
    sent = [r["usage"]["prompt_tokens"] for r in flint.responses]
    assert max(sent) > 0.5 * 4096  # sent past half the window, which part3+ would have cleared first
