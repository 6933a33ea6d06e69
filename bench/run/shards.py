"""Shards: a deterministic 1/N of a bench's plan, so N machines (a Slurm array, a Kubernetes Indexed Job, a CI
matrix) run a matrix between them, every planned run exactly once, and `python -m bench merge` joins their files.

A shard is a function of the plan alone, never of timing or of the machine: the plan (bench.run.plan.plan_runs)
is ordered by ctx, and its runs are dealt round robin, the k-th (0-based) to shard k mod N + 1. Each block of one
context size (the costly dimension) is contiguous in that order, so every shard gets as many runs of each size as
any other, give or take one, and as many runs in all, give or take one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bench.errors import ConfigError
from bench.run.plan import PlannedRun

T = TypeVar("T")
# A planned run as a row names it: the matrix's cell and its repetition (the other inputs are the bench's own).
PlannedId = tuple[str, str, str, str]


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
        if not match or not 1 <= int(match[1]) <= int(match[2]):
            raise ConfigError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def label(self) -> str:
        """The shard in a file name: shard2of4."""
        return f"shard{self.index}of{self.count}"


def deal(items: Sequence[T], count: int, ctx_of: Callable[[T], int]) -> list[list[T]]:
    """All `count` shards of `items`: ordered by ctx (stable), then dealt round robin."""
    ordered = sorted(items, key=ctx_of)
    return [ordered[start::count] for start in range(count)]


def shard_plan(plan: Sequence[PlannedRun], shard: Shard | None) -> list[PlannedRun]:
    """The runs of `plan` that `shard` runs (all of them without a shard)."""
    if shard is None:
        return list(plan)
    return deal(plan, shard.count, lambda run: run.ctx)[shard.index - 1]


def shard_out(out: Path, shard: Shard | None) -> Path:
    """The results file of a shard: the shard in its name (results/m.csv -> results/m-shard2of4.csv), so that
    every shard of a matrix can be given the same --out and still writes a file of its own."""
    if shard is None or shard.label in out.name:
        return out
    return out.with_name(f"{out.stem}-{shard.label}{out.suffix}")


def planned_id(run: PlannedRun) -> PlannedId:
    return (run.fixture.name, run.label, str(run.ctx), str(run.rep))  # label: the preset, or the agent


def row_id(row: Mapping[str, str]) -> PlannedId:
    """The planned run a row measured, in the same form as planned_id."""
    label = row.get("preset", "") or row.get("agent", "")
    return (row.get("fixture", ""), label, row.get("ctx", ""), row.get("rep", ""))


def describe(planned: PlannedId) -> str:
    fixture, preset, ctx, rep = planned
    return f"{fixture} {preset} ctx={ctx} rep={rep}"
