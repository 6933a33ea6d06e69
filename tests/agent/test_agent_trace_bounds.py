"""No event line is unbounded and no trace crosses the bench's cap, whatever a model or a server put in the fields."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

from agent import trace as trace_module
from agent.event_bounds import MAX_ITEMS, MAX_STRING, bound_fields
from agent.trace import MAX_LINE_BYTES, TRACE_BUDGET_BYTES, Trace
from bench.sandbox.trace_file import TRACE_LIMIT


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_budget_and_a_stop_line_fit_the_benchs_cap() -> None:
    assert TRACE_BUDGET_BYTES + MAX_LINE_BYTES < TRACE_LIMIT


def test_90000_planted_files_give_the_first_50_and_a_count(tmp_path: Path) -> None:
    planted = [f"tests/test_{i:05d}.py" for i in range(90_000)]
    trace = Trace(tmp_path / "events.jsonl")
    trace.emit("done_check", step=3, passed=False, planted=planted, missing=[])
    trace.close()
    [event] = lines(tmp_path / "events.jsonl")
    assert event["planted"] == planted[:MAX_ITEMS] and event["planted_omitted"] == 90_000 - MAX_ITEMS
    assert event["trimmed"] == ["planted"] and event["missing"] == []


def test_huge_strings_deep_nesting_and_odd_numbers_are_bounded_and_named() -> None:
    deep: object = 1
    for _ in range(900):
        deep = [deep]
    fields = {
        "command": "x" * 1_000_000,
        "usage": {"prompt_tokens": float("nan"), "total_tokens": 10**400, "nested": deep, "ok": 5},
        "message": "a\ud800b",
        "fine": {"a": [1, 2.5, None, True]},
    }
    bounded, trimmed = bound_fields(fields)
    assert trimmed == ["command", "usage", "message"]
    assert bounded["command"].startswith("x" * MAX_STRING) and "more characters" in bounded["command"]
    assert len(bounded["command"]) < MAX_STRING + 40 and bounded["message"] == "a\ufffdb"
    usage = bounded["usage"]
    assert isinstance(usage["prompt_tokens"], str) and "digits" in usage["total_tokens"] and usage["ok"] == 5
    assert "nested deeper than" in json.dumps(usage["nested"]) and bounded["fine"] == fields["fine"]
    json.dumps(bounded, allow_nan=False)  # valid JSON: no NaN, no infinity


def test_many_long_strings_together_keep_one_line_under_the_hard_bound(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "events.jsonl")
    record = trace.emit("tool", step=1, args={f"k{i}": "é" * 3_999 for i in range(40)}, files=["\u2603" * 4000] * 40)
    trace.close()
    line = (tmp_path / "events.jsonl").read_text()
    assert len(line.encode()) <= MAX_LINE_BYTES and record["event"] == "tool" and record["step"] == 1


def test_past_the_budget_events_are_left_out_and_the_stop_line_counts_them(tmp_path: Path) -> None:
    with mock.patch.object(trace_module, "TRACE_BUDGET_BYTES", 20_000):
        trace = Trace(tmp_path / "events.jsonl")
        for step in range(100):
            trace.emit("tool", step=step, args={"command": "y" * 1_000})
        trace.emit("stop", reason="step_limit", steps=100, message="used all steps")
        trace.close()
    events = lines(tmp_path / "events.jsonl")
    assert (tmp_path / "events.jsonl").stat().st_size < 20_000 + MAX_LINE_BYTES
    assert events[-1]["event"] == "stop" and events[-1]["events_dropped"] == 100 - (len(events) - 1)
    assert events[-1]["events_dropped"] > 50
