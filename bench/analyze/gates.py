"""`--fail-on` gates: a regression fails the command only when it is both larger than its threshold and
significant at --alpha, so noise never fails a build and a real change does.

- lower-is-better metrics (wall_s, tokens, MiB, ... see LOWER_IS_BETTER): the median grew by more than PCT
  percent of the old median (default 10), and the Mann–Whitney p-value is at most alpha.
- hidden_passed: the median fell by more than PCT percent (default 0), and p <= alpha.
- completed: the completed share fell by more than PCT percentage points (default 0), and Fisher's p <= alpha.
- infra: more than PCT percent of a later file's runs in a group were infra_error (default 0: any). Not a
  comparison: a run the infrastructure killed measured nothing, whatever the old file held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.analyze import stats
from bench.analyze.changes import HIGHER_IS_BETTER, LOWER_IS_BETTER, Change
from bench.analyze.table import infra_errors
from bench.errors import ConfigError
from bench.results.row import ResultRow

DEFAULT_LIMITS = {"completed": 0.0, "hidden_passed": 0.0, "infra": 0.0}
DEFAULT_LIMIT = 10.0
GATED = ["completed", "infra", *HIGHER_IS_BETTER, *LOWER_IS_BETTER]


@dataclass(frozen=True)
class Gate:
    """A metric whose regression beyond `limit` (percent; percentage points for completed) fails the command."""

    metric: str
    limit: float

    def describe(self, alpha: float) -> str:
        if self.metric == "infra":
            return f"infra_error runs above {self.limit:g}%"
        unit = " pp" if self.metric == "completed" else "%"
        return f"{self.metric} worse by more than {self.limit:g}{unit} at p ≤ {alpha:g}"


def parse_gate(text: str) -> Gate:
    metric, _, limit = text.partition(":")
    if metric not in GATED:
        raise ConfigError(f"--fail-on {text!r}: unknown metric {metric!r}; choose from {', '.join(GATED)}")
    if not limit:
        return Gate(metric, DEFAULT_LIMITS.get(metric, DEFAULT_LIMIT))
    try:
        value = float(limit)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise ConfigError(f"--fail-on {text!r}: the threshold must be a percentage >= 0, e.g. {metric}:20")
    return Gate(metric, value)


def tripped(gate: Gate, change: Change, alpha: float) -> bool:
    """Larger than the threshold, in the worse direction, and significant."""
    if change.worse_by is None or change.test is None:
        return False
    return change.worse_by > gate.limit and stats.significant(change.test, alpha)


def gate_line(gate: Gate, change: Change, where: str, alpha: float) -> str:
    """`FAIL  wall_s worse by more than 25% at p ≤ 0.05 in part3: b.csv vs a.csv: +60.0% (...)`."""
    head = f"{gate.describe(alpha)} in {where}"
    if change.test is None:
        return f"skip  {head}: not measured on both sides"
    detail = f"{change.text}, 95% interval {change.interval}, p = {change.p_text()}"
    if tripped(gate, change, alpha):
        return f"FAIL  {head}: {detail}"
    if change.worse_by is not None and change.worse_by > gate.limit:
        return f"ok    {head}: {detail}: larger than the threshold, but {change.verdict(alpha)}"
    return f"ok    {head}: {detail}"


def infra_line(gate: Gate, rows: Sequence[ResultRow], where: str) -> str:
    """The infra gate on one file's runs of a group."""
    head = f"{gate.describe(stats.ALPHA)} in {where}"
    if not rows:
        return f"skip  {head}: no runs"
    failed = infra_errors(rows)
    share = failed / len(rows) * 100
    return f"{'FAIL' if share > gate.limit else 'ok  '}  {head}: {failed} of {len(rows)} runs ({share:.0f}%)"
