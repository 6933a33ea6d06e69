"""`--fail-on` gates: a regression fails the command only when it is both larger than its threshold and
significant at --alpha, so noise never fails a build and a real change does. Each gate also states its power: the
smallest change its runs could detect (bench.analyze.power), and "indeterminate" when that is more than the threshold.

- lower-is-better metrics (wall_s, tokens, MiB, ... see LOWER_IS_BETTER): the median grew by more than PCT
  percent of the old median (default 10), and the Mann–Whitney p-value is at most alpha.
- hidden_passed: the median fell by more than PCT percent (default 0), and p <= alpha.
- completed: the completed share fell by more than PCT percentage points (default 0), and Fisher's p <= alpha;
  where both sides ran the same fixtures, also the paired test (bench.analyze.paired).
- infra: more than PCT percent of a later file's runs in a group were infra_error (default 0: any). Not a
  comparison: a run the infrastructure killed measured nothing, whatever the old file held.

Outcomes: FAIL (tripped), ok (not tripped, and the runs could have caught a change at the threshold),
indeterminate (not tripped, but the runs can detect only changes above the threshold, or none at all: too few),
skip (nothing to compare). With `--strict` a skip fails: a gate with no baseline, or a metric not measured, must
not pass a build blind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.analyze import power, stats
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


def detectable(gate: Gate, change: Change, alpha: float) -> float | None:
    """The smallest change (percent; pp for completed) these runs detect with 80% power; None: cannot be told."""
    if gate.metric == "completed":
        share = sum(change.old_values) / len(change.old_values) if change.old_values else 0.0
        return power.detectable_drop(share, len(change.old_values), len(change.new_values), alpha)
    return power.detectable(change.old_values, change.new_values, alpha)


def power_text(gate: Gate, change: Change, alpha: float) -> tuple[str, bool]:
    """`can detect 22%` and whether the gate is indeterminate: it cannot detect a change at its threshold."""
    mde = detectable(gate, change, alpha)
    runs = f"{len(change.old_values)} vs {len(change.new_values)} runs"
    unit = " pp" if gate.metric == "completed" else "%"
    if mde is None:
        return f"{runs}: spread unknown (one run a side)", False
    if math.isinf(mde):
        return f"indeterminate: {runs} can detect no change at p ≤ {alpha:g}", True
    if gate.limit > 0 and mde > gate.limit:
        return f"indeterminate: {runs} can detect only {mde:.0f}{unit} (80% power), above the threshold", True
    return f"{runs} detect {mde:.0f}{unit} (80% power)", False


def gate_line(gate: Gate, change: Change, where: str, alpha: float, strict: bool = False) -> str:
    """`FAIL  wall_s worse by more than 25% at p ≤ 0.05 in part3: b.csv vs a.csv: +60.0% (...)`."""
    head = f"{gate.describe(alpha)} in {where}"
    if change.test is None:
        return f"{'FAIL' if strict else 'skip'}  {head}: not measured on both sides{STRICT_HINT if strict else ''}"
    detail = f"{change.text}, interval {change.interval}, p = {change.p_text()}"
    if tripped(gate, change, alpha):
        return f"FAIL  {head}: {detail}"
    said, indeterminate = power_text(gate, change, alpha)
    if indeterminate:
        return f"indeterminate  {head}: {detail}; {said}"
    if change.worse_by is not None and change.worse_by > gate.limit:
        return f"ok    {head}: {detail}: larger than the threshold, but {change.verdict(alpha)}; {said}"
    return f"ok    {head}: {detail}; {said}"


STRICT_HINT = (
    " (--strict: a gate with nothing to compare fails; if the configuration changed on purpose, start a new baseline)"
)


def infra_line(gate: Gate, rows: Sequence[ResultRow], where: str) -> str:
    """The infra gate on one file's runs of a group."""
    head = f"{gate.describe(stats.ALPHA)} in {where}"
    if not rows:
        return f"skip  {head}: no runs"
    failed = infra_errors(rows)
    share = failed / len(rows) * 100
    return f"{'FAIL' if share > gate.limit else 'ok  '}  {head}: {failed} of {len(rows)} runs ({share:.0f}%)"
