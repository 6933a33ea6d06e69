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
from bench.results.append import lost_runs
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


@dataclass(frozen=True)
class GateResult:
    """One gate on one group and later file: its outcome, what it saw, and what its runs could catch."""

    outcome: str  # FAIL, ok, indeterminate, skip
    gate: str  # "wall_s worse by more than 25% at p ≤ 0.05"
    where: str  # "part3: b.csv vs a.csv"
    detail: str  # the change, or why there is none
    said: str = ""  # the power: "10 vs 10 runs: the gate catches +34% 4 times in 5 (80% power)"
    power: dict[str, float | int | None] | None = None  # the same as numbers (None: not told)
    change: Change | None = None
    metric: str = ""  # the gate's own, set by whoever ran it (bench.analyze.comparison)
    limit: float | None = None

    @property
    def line(self) -> str:
        tail = f"; {self.said}" if self.said else ""
        return f"{self.outcome.ljust(4)}  {self.gate} in {self.where}: {self.detail}{tail}"


def stated_power(gate: Gate, change: Change, alpha: float) -> power.GatePower | None:
    """What this gate's runs could catch (bench.analyze.power); None: the spread cannot be told."""
    old, new = change.old_values, change.new_values
    if gate.metric == "completed":
        share = sum(old) / len(old) if old else 0.0
        return power.share_gate_power(share_old=share, n=len(old), m=len(new), threshold=gate.limit, alpha=alpha)
    return power.gate_power(old, new, gate.limit, alpha)


def power_text(gate: Gate, change: Change, alpha: float) -> tuple[str, bool, dict[str, float | int | None]]:
    """`10 vs 10 runs: the gate catches +34% 4 times in 5 (80% power)`, whether the gate is indeterminate (its test
    alone cannot reach 80% power at its threshold), and the same as numbers."""
    found = stated_power(gate, change, alpha)
    n, m = len(change.old_values), len(change.new_values)
    runs = f"{n} vs {m} runs"
    numbers: dict[str, float | int | None] = {"old_runs": n, "new_runs": m, "power": power.POWER}
    if found is None:
        return f"{runs}: spread unknown (one run a side)", False, numbers
    if gate.metric == "completed" and not any(change.old_values):
        return f"{runs}: the old runs completed none, so completion cannot drop", False, numbers
    numbers |= {"gate_catches": _number(found.catches), "test_detects": _number(found.test_detects)}
    unit = " pp" if gate.metric == "completed" else "%"
    sign = "-" if gate.metric in ("completed", *HIGHER_IS_BETTER) else "+"
    if math.isinf(found.catches):
        n_old, n_new = stats.runs_needed(n, m, alpha)
        return f"indeterminate: {runs} can detect no change at p ≤ {alpha:g} (needs {n_old} vs {n_new})", True, numbers
    catches = f"the gate catches {sign}{found.catches:.0f}{unit} 4 times in 5 (80% power)"
    if gate.limit > 0 and found.test_detects > gate.limit:
        reps = _reps(gate, change, alpha)
        numbers["reps_needed"] = reps
        more = f"REPS={reps} would" if reps else "no REPS this tool tries would"
        said = (
            f"indeterminate: {runs} can detect only {sign}{found.test_detects:.0f}{unit} (80% power), above the "
            f"threshold, and {catches}; {more} detect {sign}{gate.limit:g}{unit}"
        )
        return said, True, numbers
    return f"{runs}: {catches}", False, numbers


def _number(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 1)


def _reps(gate: Gate, change: Change, alpha: float) -> int | None:
    """The runs per side (the old side scaled alike) whose test would reach 80% power at the threshold."""
    old, new = change.old_values, change.new_values
    if gate.metric == "completed":
        share = sum(old) / len(old)
        ratio = len(old) / len(new)
        reps = len(new)
        while round(reps * ratio) * reps <= power.MAX_CELLS:
            if (
                power.share_gate_power(
                    share_old=share, n=max(1, round(reps * ratio)), m=reps, threshold=gate.limit, alpha=alpha
                ).test_detects
                <= gate.limit
            ):
                return reps
            reps += 1
        return None
    sigma = power.spread(old, new)
    return (
        None
        if sigma is None
        else power.reps_for(n_old=len(old), n_new=len(new), sigma=sigma, threshold=gate.limit, alpha=alpha)
    )


def evaluate(gate: Gate, change: Change, where: str, alpha: float, strict: bool = False) -> GateResult:
    """The gate on one change: FAIL, ok, indeterminate, or skip (FAIL with --strict) when nothing was compared."""
    head = gate.describe(alpha)
    if change.test is None:
        detail = f"not measured on both sides{STRICT_HINT if strict else ''}"
        return GateResult("FAIL" if strict else "skip", head, where, detail, change=change)
    detail = f"{change.text}, interval {change.interval}, p = {change.p_text()}"
    if tripped(gate, change, alpha):
        return GateResult("FAIL", head, where, detail, change=change)
    said, indeterminate, numbers = power_text(gate, change, alpha)
    if indeterminate:
        return GateResult(
            outcome="indeterminate", gate=head, where=where, detail=detail, said=said, power=numbers, change=change
        )
    if change.worse_by is not None and change.worse_by > gate.limit:
        detail += f": larger than the threshold, but {change.verdict(alpha)}"
    return GateResult(outcome="ok", gate=head, where=where, detail=detail, said=said, power=numbers, change=change)


def gate_line(gate: Gate, change: Change, where: str, alpha: float, strict: bool = False) -> str:
    """`FAIL  wall_s worse by more than 25% at p ≤ 0.05 in part3: b.csv vs a.csv: +60.0% (...)`."""
    return evaluate(gate=gate, change=change, where=where, alpha=alpha, strict=strict).line


STRICT_HINT = (
    " (--strict: a gate with nothing to compare fails; if the configuration changed on purpose, start a new baseline)"
)


def infra_result(gate: Gate, rows: Sequence[ResultRow], where: str) -> GateResult:
    """The infra gate on one file's runs of a group."""
    head = gate.describe(stats.ALPHA)
    if not rows:
        return GateResult("skip", head, where, "no runs")
    # A run that failed for the infrastructure and was run again (--resume) is not lost: only the rest count.
    infra = infra_errors(rows)
    failed = len(lost_runs(row.cells() for row in rows)) if infra else 0  # each row as cells only when one failed
    redone = infra - failed
    share = failed / len(rows) * 100
    detail = f"{failed} of {len(rows)} runs ({share:.0f}%)" + (f"; {redone} more run again" if redone else "")
    return GateResult("FAIL" if share > gate.limit else "ok", head, where, detail)


def infra_line(gate: Gate, rows: Sequence[ResultRow], where: str) -> str:
    return infra_result(gate, rows, where).line
