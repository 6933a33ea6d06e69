"""What a results row's cells must hold to be read at all: a number that is a measure (finite, not negative where a
negative value means nothing), a count within its total, a known stop reason, a run id once per file.

A cell that breaks a rule is never read as a value: the readers refuse the file in one line naming the file, the row
and the column (bench.results.read.read_runs), or skip the row and count it when asked to (--skip-bad-rows).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from bench.results.column import Column
from bench.results.row import ResultRow, model
from bench.results.schema import AGENT_STOP_REASONS, INFRA_STOP_REASON

# Differences of measures, negative when the servers counted more time than the run took (their docs say so).
MAY_BE_NEGATIVE = ("harness_s", "own_s")
STOP_REASONS = (*AGENT_STOP_REASONS, INFRA_STOP_REASON)
WITHIN = (("hidden_passed", "hidden_total"), ("visible_passed", "visible_total"))  # count, the total it is of


@dataclass(frozen=True)
class BadCell:
    """The first rule a row breaks: which column, and what is wrong with its cell."""

    column: str
    problem: str


def bad_cell(row: ResultRow, seen_ids: set[str]) -> BadCell | None:
    """The first rule `row` breaks, or None; `seen_ids` holds the run ids of the rows before it (and gets its own)."""
    for column in _numeric_columns():
        problem = _number_problem(column, row)
        if problem:
            return BadCell(column.name, problem)
    if row.stop_reason and row.stop_reason not in STOP_REASONS:
        return BadCell("stop_reason", f"{row.stop_reason!r} is no stop reason (one of {', '.join(STOP_REASONS)})")
    for count, total in WITHIN:
        passed, of = row.number(count), row.number(total)
        if passed is not None and of is not None and passed > of:
            return BadCell(count, f"{passed:g} is more than {total} {of:g}")
    if row.run_id in seen_ids:
        return BadCell("run_id", f"{row.run_id!r} is on an earlier row too (a run counted twice)")
    if row.run_id:
        seen_ids.add(row.run_id)
    return None


@cache  # every row read is checked: its numeric columns, found once
def _numeric_columns() -> tuple[Column, ...]:
    return tuple(column for column in model() if column.kind in (int, float))


def _number_problem(column: Column, row: ResultRow) -> str:
    value = getattr(row, column.name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if not math.isfinite(value):
        return f"{value} is not a measurement (a finite number or empty)"
    if value < 0 and column.name not in MAY_BE_NEGATIVE:
        return f"{value:g} is negative: {column.name} cannot be"
    return ""
