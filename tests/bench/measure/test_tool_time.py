"""tools_s from the trace: the tools' and done checks' seconds, Jeff's opinions taken out, None when not measured."""

from __future__ import annotations

import pytest

from bench.measure.tool_time import tools_seconds

START = {"event": "start", "n_ctx": 4096}


def tool(seconds: object, name: str = "run") -> dict[str, object]:
    return {"event": "tool", "step": 1, "name": name, "seconds": seconds}


def test_tools_and_done_checks_add_up_and_jeffs_opinions_are_left_out() -> None:
    events = [
        START,
        {"event": "jeff", "step": 1, "command": "ls", "seconds": 0.75},  # inside the run tool's 1.0 s
        tool(1.0),
        tool(0.125, "read_file"),
        {"event": "done_check", "step": 2, "passed": False, "seconds": 2.5},
        {"event": "response", "step": 3},  # model time: not a tool's
    ]
    assert tools_seconds(events) == 2.875


def test_a_run_without_tools_measured_zero() -> None:
    assert tools_seconds([START, {"event": "response", "step": 1}, {"event": "stop", "reason": "step_limit"}]) == 0.0


@pytest.mark.parametrize("seconds", [None, "1.0", True, float("nan"), -1.0])
def test_a_missing_or_bad_figure_makes_the_sum_not_measured(seconds: object) -> None:
    events = [START, tool(1.0), {"event": "done_check", "step": 2, "passed": True, "seconds": seconds}]
    if seconds is None:
        del events[2]["seconds"]  # an older agent's done check: no seconds at all
    assert tools_seconds(events) is None


def test_rounding_never_makes_it_negative() -> None:
    assert tools_seconds([{"event": "jeff", "seconds": 0.001}, tool(0.0)]) == 0.0
