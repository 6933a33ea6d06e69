"""Benchmark: what the harness itself costs, apart from the model.

    python perf/harness.py

Measures (median of several repeats) and checks each against a target; exits 1 when one is missed:
- clearing a long conversation (300 tool results of 4,000 characters): it runs after every answer past the threshold;
- the agent's own time per step, against the scripted server with no model delay (HTTP, JSON, tools, trace);
- computing a results row and its failure labels from a 10,000-event trace.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agent.clearing import clear_old
from agent.cli import main as agent_main
from bench.measure.labels import failure_labels
from bench.measure.trace_numbers import trace_metrics
from bench.testing import fake_llama

TARGETS_MS = {"clear_old, 300 tool results": 50.0, "agent time per step": 40.0, "row from 10,000 events": 500.0}


def conversation(results: int) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": "s" * 2000}, {"role": "user", "content": "task"}]
    for i in range(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(
            {"path": f"f{i}.py", "content": "x = 1\n" * 600})}}  # fmt: skip
        messages.append({"role": "assistant", "content": "", "reasoning_content": "r" * 1000, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "y" * 4000})
    return messages


def median_ms(fn: Callable[[], object], repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def bench_clearing() -> float:
    base = conversation(300)
    return median_ms(lambda: clear_old(copy.deepcopy(base), keep=2)) - median_ms(lambda: copy.deepcopy(base))


def bench_agent_steps(steps: int = 30) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        (repo / "mod.py").write_text("def f():\n    return 1\n" * 50)
        (repo / "test_mod.py").write_text("from mod import f\n\n\ndef test_f():\n    assert f() == 1\n")
        replies = [fake_llama.tool_call("read_file", {"path": "mod.py"}) for _ in range(steps)]
        with fake_llama.FakeLlama(replies, n_ctx=1_000_000) as flint:
            events = str(repo.parent / f"{repo.name}.jsonl")
            argv = ["--repo", tmp, "--task", "read", "--flint", flint.url, "--no-jeff", "--approve", "no",
                    "--max-steps", str(steps), "--preset", "part3", "--events", events]  # fmt: skip
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):  # the agent's per-step lines are not the point here
                agent_main(argv)
            elapsed = (time.perf_counter() - start) * 1000
    return elapsed / steps


def bench_row(events_n: int = 10_000) -> float:
    usage = {"prompt_tokens": 3000, "completion_tokens": 200, "total_tokens": 3200}
    timings = {"prompt_n": 300, "cache_n": 2700, "prompt_ms": 100.0, "predicted_ms": 900.0}
    events: list[dict] = [{"t": 0, "event": "start", "n_ctx": 4096}]
    for step in range(events_n // 2):
        events.append({"t": step, "event": "response", "step": step, "usage": usage, "timings": timings})
        events.append({"t": step, "event": "tool", "step": step, "name": "read_file", "args": {"path": f"f{step % 7}"}})
    events.append({"t": events_n, "event": "stop", "reason": "step_limit", "steps": events_n // 2})

    def row() -> None:
        values = trace_metrics(events, wall_s=100.0)
        failure_labels(events, values | {"files_changed": "0"})

    return median_ms(row)


def main() -> int:
    measured = {
        "clear_old, 300 tool results": bench_clearing(),
        "agent time per step": bench_agent_steps(),
        "row from 10,000 events": bench_row(),
    }
    failed = 0
    for name, ms in measured.items():
        ok = ms <= TARGETS_MS[name]
        failed += not ok
        print(f"{name}: {ms:.1f} ms (target <= {TARGETS_MS[name]:.0f} ms) {'ok' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
