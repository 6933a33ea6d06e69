"""What every perf module hands the table (perf/run.py): `figures(quick: bool) -> list[dict]`, one dict per figure

    {"figure": str, "unit": str, "median": float, "min": float, "max": float, "repeats": int,
     "target": "<= 2.0" | ">= 1.8" | None, "passed": bool | None}

the median of several repeats with its range, and whether the median meets the target (None: no target, or quick
mode, whose figures are not judged). A module whose figures cannot be measured here (no Docker engine, no
llama-server) raises Unavailable with the reason; one figure of several that cannot is `not_measured(name, reason)`.
Either is listed apart, and fails a full run: a target that cannot be measured must not pass unseen.
"""

from __future__ import annotations

import operator
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Figure = dict[str, Any]


@dataclass(frozen=True)
class PerfTask:
    """The task a bench of a perf module runs (its bench settings), and the file of it a scripted answer reads."""

    settings: dict[str, Any]
    read: str


# Quick mode runs the suite's small task, calc (tests/fixtures_root/README.md): it proves that the module runs, and
# its grading starts one pytest where todo_repo's costs some 5 s of CPU a run.
TASK = PerfTask({"fixtures": ["todo_repo"]}, "todo.py")
QUICK_TASK = PerfTask(
    {"fixtures_root": str(Path(__file__).parents[1] / "tests" / "fixtures_root"), "fixtures": ["calc"]}, "calc.py"
)


def perf_task(quick: bool) -> PerfTask:
    return QUICK_TASK if quick else TASK


COMPARE = {"<=": operator.le, ">=": operator.ge, "<": operator.lt, ">": operator.gt}


class Unavailable(Exception):
    """The figure needs something this machine lacks; the message says what."""


def meets(value: float, target: str | None) -> bool | None:
    """Whether `value` meets a target like "<= 2.0"; None without a target."""
    if target is None:
        return None
    sign, _, bound = target.partition(" ")
    return bool(COMPARE[sign](value, float(bound)))


def figure(name: str, unit: str, samples: list[float], target: str | None, quick: bool = False) -> Figure:
    """A figure from its repeated samples; quick figures are not judged."""
    median = statistics.median(samples)
    return {
        "figure": name,
        "unit": unit,
        "median": median,
        "min": min(samples),
        "max": max(samples),
        "repeats": len(samples),
        "target": target,
        "passed": None if quick else meets(median, target),
    }


def not_measured(name: str, reason: str) -> Figure:
    """A figure this machine cannot measure (the others of its module still stand), with the reason."""
    return {"figure": name, "not_measured": reason}


def timed(fn: Callable[[], object], repeats: int, scale: float = 1.0) -> list[float]:
    """`fn`'s wall time over `repeats` calls, in seconds times `scale` (1000: milliseconds)."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * scale)
    return samples
