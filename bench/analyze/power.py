"""How large a change a set of runs can detect, and how many runs it takes to detect one.

The smallest detectable change (MDE) at the gate's alpha with 80% power, from the observed spread:
- a measured metric: the pooled standard deviation of the runs' logarithms (of the values in units of the old
  median when some are not positive), through the two-sample t quantiles, divided by the square root of
  Mann–Whitney's efficiency against the t test (3/pi for normal data), so in the rank test's own terms;
- the completed share: the drop from the old share that Cohen's arcsine effect size makes detectable.
None of it can beat the exact tests' floor: runs too few to reach p <= alpha detect nothing (an infinite MDE).

A gate fails only when the change is also beyond its threshold, so the change it catches 80% of the time is the
larger of the MDE and the threshold plus the 80% quantile of the observed change's noise (`gate_catches`).
`runs_for` inverts that, for the nightly's choice of repetitions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy import stats as scipy_stats

from bench.analyze.stats import ALPHA, smallest_p

POWER = 0.8
RANK_EFFICIENCY = 3 / math.pi  # Mann–Whitney against the t test, normal data: it needs 1/0.955 times the runs


def spread(old: Sequence[float], new: Sequence[float]) -> float | None:
    """The runs' pooled standard deviation on the log scale (relative to the old median when a value is not
    positive); None when neither side has two runs."""
    if min([*old, *new], default=0) > 0:
        before, after = [math.log(v) for v in old], [math.log(v) for v in new]
    else:
        base = abs(statistics.median(old)) if old else 0.0
        if base == 0:
            return None
        before, after = [v / base for v in old], [v / base for v in new]
    parts = [(len(side) - 1, statistics.variance(side)) for side in (before, after) if len(side) >= 2]
    if not parts:
        return None
    return math.sqrt(sum(df * var for df, var in parts) / sum(df for df, _ in parts))


def _noise(sigma: float, n: int, m: int, alpha: float) -> tuple[float, float, float]:
    """The change's standard error in the rank test's terms, and the t quantiles for alpha/2 and the power."""
    df = max(n + m - 2, 1)
    se = sigma * math.sqrt(1 / n + 1 / m) / math.sqrt(RANK_EFFICIENCY)
    return se, float(scipy_stats.t.ppf(1 - alpha / 2, df)), float(scipy_stats.t.ppf(POWER, df))


def detectable(old: Sequence[float], new: Sequence[float], alpha: float = ALPHA) -> float | None:
    """The smallest change in percent the rank test detects with 80% power; inf when it cannot detect any; None
    when the spread cannot be told (one run a side)."""
    n, m = len(old), len(new)
    if n == 0 or m == 0 or smallest_p(n, m) > alpha:
        return math.inf
    sigma = spread(old, new)
    if sigma is None:
        return None
    se, alpha_t, power_t = _noise(sigma, n, m, alpha)
    shift = (alpha_t + power_t) * se
    return float(math.expm1(shift) * 100) if min([*old, *new]) > 0 else float(shift * 100)


def gate_catches(old: Sequence[float], new: Sequence[float], threshold: float, alpha: float = ALPHA) -> float | None:
    """The smallest change in percent a gate at `threshold` percent fails for 80% of the time."""
    mde = detectable(old, new, alpha)
    sigma = spread(old, new)
    if mde is None or sigma is None or math.isinf(mde):
        return mde
    se, _, power_t = _noise(sigma, len(old), len(new), alpha)
    beyond = math.log1p(threshold / 100) + power_t * se
    return max(mde, float(math.expm1(beyond) * 100))


def detectable_drop(share_old: float, n: int, m: int, alpha: float = ALPHA) -> float:
    """The smallest drop of the completed share, in percentage points, Fisher's test detects with 80% power from
    `share_old`; inf when even a drop to 0 is not enough."""
    if n == 0 or m == 0 or smallest_p(n, m) > alpha:
        return math.inf
    h = (scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(POWER)) * math.sqrt(1 / n + 1 / m)
    angle = math.asin(math.sqrt(share_old)) - h / 2
    if angle < 0:
        return math.inf
    return (share_old - math.sin(angle) ** 2) * 100


def runs_for(catch: float, threshold: float, cv: float, pooled: int, alpha: float = ALPHA) -> int:
    """The fewest runs a night needs, against `pooled` times as many baseline runs, for a gate at `threshold`
    percent to catch a `catch` percent change 80% of the time, with runs varying by `cv` (coefficient of
    variation)."""
    sigma = math.sqrt(math.log1p(cv**2))  # the log-normal's sigma for that coefficient of variation
    for runs in range(1, 1000):
        old, new = runs * pooled, runs
        if smallest_p(old, new) > alpha:
            continue
        se, alpha_t, power_t = _noise(sigma, old, new, alpha)
        mde = math.expm1((alpha_t + power_t) * se) * 100
        if max(mde, math.expm1(math.log1p(threshold / 100) + power_t * se) * 100) <= catch:
            return runs
    raise ValueError(f"no number of runs below 1000 catches {catch}% at a {threshold}% threshold with cv {cv}")
