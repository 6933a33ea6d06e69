"""What belongs to a matrix when the files of its shards are merged (`bench merge --config`): one row of each
planned run, of the matrix's split, settings and setup.

A row does not belong, and is refused (or, with --keep-extra, kept apart and listed), when:
- its run is not in the plan: another fixture, preset, window or repetition than the matrix's;
- it ran with other settings: the columns of the comparison key the matrix fixes (fixture hash, step limit,
  sampling, keep, clear_at, and sandbox and servers when the matrix names them) differ from the plan's;
- it is of another split: its shard is not I/N of the matrix's N (`--shards`, else the N most rows carry), or its run
  is not one that shard I of N is dealt (bench.run.shards.deal);
- its setup is not the matrix's: the comparison key's other columns (the models, the server build and cache
  settings, the GPU and the memory method: what compare never pools across, bench.analyze.table.KEY_COLUMNS) differ
  from those most rows that measured a run share;
- it duplicates a run: a second row that measured a planned run already measured (infra_error rows, which
  measured nothing, stay beside the one that counts).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.analyze.table import KEY_COLUMNS, memory_method
from bench.config import BenchConfig
from bench.errors import ConfigError
from bench.results.read import Row
from bench.results.schema import INFRA_STOP_REASON
from bench.run.plan import MATRIX_COLUMNS, PlannedRun, matrix_cells, plan_runs
from bench.run.shards import PlannedId, Shard, deal, describe, planned_id, row_id


@dataclass(frozen=True)
class Extra:
    """A row that does not belong to the matrix, and why."""

    row: Row
    reason: str

    def line(self) -> str:
        shard = self.row.get("shard") or "-"
        return f"{self.row['run_id']} ({describe(row_id(self.row))}, shard {shard}): {self.reason}"


@dataclass(frozen=True)
class Matrix:
    """The plan the shards split: each planned run with the cells the matrix fixes, in plan order, and the split."""

    plan: list[PlannedRun]
    cells: dict[PlannedId, dict[str, str]]
    shards: int | None = None  # `--shards N`; None: the N most rows carry

    @classmethod
    def of(cls, config: BenchConfig, checkout: Path, shards: int | None = None) -> Matrix:
        if shards is not None and shards < 1:
            raise ConfigError(f"--shards {shards}: at least 1")
        plan = plan_runs(config, checkout)
        return cls(plan, {planned_id(run): matrix_cells(run, config) for run in plan}, shards)

    @property
    def planned(self) -> list[PlannedId]:
        return list(self.cells)

    def fixed(self) -> list[str]:
        """The comparison key's columns the matrix fixes; the others are the setup the servers and hosts report."""
        return [column for column in KEY_COLUMNS if any(column in cells for cells in self.cells.values())]

    def dealt(self, count: int) -> dict[PlannedId, int]:
        """Which shard of `count` each planned run is dealt to."""
        parts = deal(self.plan, count, lambda run: run.ctx)
        return {planned_id(run): index for index, part in enumerate(parts, start=1) for run in part}


def split(rows: Sequence[Row], matrix: Matrix) -> tuple[list[Row], list[Extra]]:
    """The rows that belong to `matrix` (in their order), and the others with the reason of each."""
    count = matrix.shards or _common_count(rows)
    dealt = matrix.dealt(count) if count else {}
    extras: list[Extra] = []
    kept: list[Row] = []
    for row in rows:
        reason = _unplanned(row, matrix) or _other_settings(row, matrix) or _other_split(row, count, dealt)
        if reason:
            extras.append(Extra(row, reason))
        else:
            kept.append(row)
    setup = _common_setup(kept, matrix)
    belonging: list[Row] = []
    counted: dict[PlannedId, Row] = {}  # the row that counts for each planned run measured
    for row in kept:
        reason = _other_setup(row, setup, matrix)
        first = counted.get(row_id(row)) if not reason and _measured(row) else None
        if first is not None:
            reason = f"a second row of a run already measured by {first['run_id']}"
        if reason:
            extras.append(Extra(row, reason))
            continue
        belonging.append(row)
        if _measured(row):
            counted[row_id(row)] = row
    return belonging, extras


def _measured(row: Row) -> bool:
    return row["stop_reason"] != INFRA_STOP_REASON


def _unplanned(row: Row, matrix: Matrix) -> str:
    if row_id(row) in matrix.cells:
        return ""
    fixture, preset, ctx, rep = row_id(row)
    plan = matrix.plan
    for column, value, values in (
        ("fixture", fixture, {run.fixture.name for run in plan}),
        ("preset", preset, {run.preset for run in plan}),
        ("ctx", ctx, {str(run.ctx) for run in plan}),
        ("rep", rep, {str(run.rep) for run in plan}),
    ):
        if value not in values:
            return (
                f"not in the plan: {column} {value or 'empty'} is not among the matrix's ({', '.join(sorted(values))})"
            )
    return "not in the plan: the matrix has no run of that fixture, preset, ctx and rep"


def _other_settings(row: Row, matrix: Matrix) -> str:
    planned = matrix.cells[row_id(row)]
    differ = [c for c in MATRIX_COLUMNS if c in planned and row.get(c, "") != planned[c]]
    return "; ".join(f"run with {c} {row.get(c) or 'empty'!r}, the matrix's is {planned[c]!r}" for c in differ)


def _other_split(row: Row, count: int | None, dealt: dict[PlannedId, int]) -> str:
    text = row.get("shard", "")
    if count is None:
        return f"of a shard ({text}) in a merge of unsharded runs" if text else ""
    if not text:
        return f"not of a shard of {count}: the row has no shard"
    shard = Shard.parse(text)
    if shard.count != count:
        return f"of a split into {shard.count} shards, not the matrix's {count}"
    if dealt[row_id(row)] != shard.index:
        return f"not a run of shard {shard}: that run is dealt to shard {dealt[row_id(row)]}/{count}"
    return ""


def _common_count(rows: Sequence[Row]) -> int | None:
    counts = Counter(Shard.parse(row["shard"]).count for row in rows if row.get("shard"))
    return counts.most_common(1)[0][0] if counts else None


def _setup(row: Row, matrix: Matrix) -> tuple[str, ...]:
    fixed = matrix.fixed()
    observed = [column for column in KEY_COLUMNS if column not in fixed]
    return tuple(memory_method(row.get(c, "")) if c == "gpu_mem_method" else row.get(c, "") for c in observed)


def _common_setup(rows: Sequence[Row], matrix: Matrix) -> tuple[str, ...] | None:
    """The setup most measured rows share (the first seen of a tie); None when no row measured a run."""
    setups = Counter(_setup(row, matrix) for row in rows if _measured(row))
    return setups.most_common(1)[0][0] if setups else None


def _other_setup(row: Row, setup: tuple[str, ...] | None, matrix: Matrix) -> str:
    if setup is None or not _measured(row):
        return ""
    mine = _setup(row, matrix)
    observed = [column for column in KEY_COLUMNS if column not in matrix.fixed()]
    differ = [(c, a, b) for c, a, b in zip(observed, mine, setup, strict=True) if a != b]
    parts = "; ".join(f"{column} {a or 'empty'!r}, the matrix's {b or 'empty'!r}" for column, a, b in differ)
    return f"another setup than the matrix's: {parts}" if differ else ""
