"""What a gate's own decision can catch: the change it fails for 80% of the time, and how many runs it takes.

A gate fails when the change is beyond its threshold *and* its test rejects "no change" at alpha (bench.analyze.gates).
Its power is that of both together, never of the test alone: at a true change equal to the threshold the observed
change clears the threshold only about half the time, so a gate catches 80% only of changes well above its threshold.

- A measured metric: runs log-normal with the observed spread (the pooled standard deviation of the runs' logarithms,
  or of the values in units of the old median when some are not positive), a true change multiplying the new runs.
  The gate is played on TRIALS simulated pairs of run sets (fixed seed, numpy): per trial, the smallest change at which
  the observed change of the medians clears the threshold and the smallest at which the exact rank test rejects (the
  Mann–Whitney critical value, bench.analyze.stats.excluded_pairs); the gate fails from the larger of the two on. The
  80% quantile over the trials is the change the gate catches 4 times in 5. Both parts scale with the spread, so one
  simulation per number of runs serves every spread and threshold.
- The completed share: exactly, summing over every outcome of both sides' binomials, Fisher's exact p-value of each
  (from the hypergeometric distribution, as scipy.stats.fisher_exact computes it) and the drop beyond the threshold.

A gate is indeterminate when its test alone cannot reach 80% power at a change of its threshold: then more runs, not
the threshold, decide what it lets pass, and `reps_for` says how many would do.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from bench.analyze import null_distributions
from bench.analyze.stats import ALPHA, excluded_pairs, smallest_p

POWER = 0.8
TRIALS = 4000
SEED = 20261130
CELL_BUDGET = 4_000_000  # pairwise differences held at once: trials are simulated in chunks of this size
CELL_TOTAL = 8_000_000  # pairwise differences per simulation: many runs a side get fewer trials (their noise is small)
MIN_TRIALS = 400
MAX_CELLS = 100_000  # the largest design `reps_for` tries (old runs x new runs)


@dataclass(frozen=True)
class GatePower:
    """What a gate's runs can catch, in percent (percentage points for completed); inf: nothing at all."""

    catches: float  # the change the gate itself fails for 80% of the time
    test_detects: float  # the change its test alone rejects 80% of the time (no threshold)


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


@cache
def _trials(n_old: int, n_new: int, alpha: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Per simulated trial of standard normal runs: the medians' difference (new - old), and the shift from which
    the two-sided exact rank test rejects upwards (the k-th smallest pairwise difference old - new). None when no
    result of these runs can reject."""
    cut = excluded_pairs(n_old, n_new, alpha)
    if cut == 0:
        return None
    k = n_old * n_new - cut  # U counts the pairs a new run beats: it rejects from n*m - cut + 1 on (0-based: k)
    trials = min(TRIALS, max(MIN_TRIALS, CELL_TOTAL // (n_old * n_new)))
    rng = np.random.default_rng(SEED)
    old, new = rng.standard_normal((trials, n_old)), rng.standard_normal((trials, n_new))
    medians = np.median(new, axis=1) - np.median(old, axis=1)
    rank = np.empty(trials)
    chunk = max(1, CELL_BUDGET // (n_old * n_new))
    for start in range(0, trials, chunk):
        pairs = (old[start : start + chunk, :, None] - new[start : start + chunk, None, :]).reshape(-1, n_old * n_new)
        rank[start : start + chunk] = np.partition(pairs, k, axis=1)[:, k]
    return medians, rank


def gate_power(old: Sequence[float], new: Sequence[float], threshold: float, alpha: float = ALPHA) -> GatePower | None:
    """The changes (percent) a gate at `threshold` percent, and its rank test alone, catch 80% of the time with these
    runs' spread; None when the spread cannot be told (one run a side)."""
    n, m = len(old), len(new)
    if n == 0 or m == 0 or smallest_p(n, m) > alpha:
        return GatePower(math.inf, math.inf)
    sigma = spread(old, new)
    if sigma is None:
        return None
    return _simulated(n=n, m=m, sigma=sigma, threshold=threshold, alpha=alpha, log_scale=min([*old, *new]) > 0)


def _simulated(n: int, m: int, sigma: float, threshold: float, alpha: float, log_scale: bool = True) -> GatePower:
    found = _trials(n, m, alpha)
    if found is None:
        return GatePower(math.inf, math.inf)
    medians, rank = found
    limit = math.log1p(threshold / 100) if log_scale else threshold / 100
    fails_from = np.maximum(limit - sigma * medians, sigma * rank)
    gate, test = float(np.quantile(fails_from, POWER)), float(np.quantile(sigma * rank, POWER))
    if log_scale:
        gate, test = math.expm1(gate), math.expm1(test)
    return GatePower(max(gate * 100, 0.0), max(test * 100, 0.0))


def reps_for(n_old: int, n_new: int, sigma: float, threshold: float, alpha: float = ALPHA) -> int | None:
    """The fewest new runs (the old side scaled alike: a pooled baseline keeps its ratio) whose rank test reaches 80%
    power at a change of `threshold` percent with spread `sigma`; None when more than MAX_CELLS pairs would be."""
    ratio = n_old / n_new if n_new else 1.0
    low, high = n_new, max(n_new, 1)
    while (
        _test_detects(reps=high, ratio=ratio, sigma=sigma, threshold=threshold, alpha=alpha) > threshold
    ):  # the power grows with the runs: double
        low, high = high, high * 2
        if round(high * ratio) * high > MAX_CELLS:
            return None
    while high - low > 1:  # then bisect
        middle = (low + high) // 2
        if _test_detects(reps=middle, ratio=ratio, sigma=sigma, threshold=threshold, alpha=alpha) <= threshold:
            high = middle
        else:
            low = middle
    return high


def _test_detects(reps: int, ratio: float, sigma: float, threshold: float, alpha: float) -> float:
    return _simulated(n=max(1, round(reps * ratio)), m=reps, sigma=sigma, threshold=threshold, alpha=alpha).test_detects


@cache
def fisher_p_values(n_old: int, n_new: int) -> np.ndarray:
    """Fisher's exact two-sided p-value of every table: [done_old, done_new] for 0..n_old and 0..n_new completed."""
    p = np.ones((n_old + 1, n_new + 1))
    for total in range(n_old + n_new + 1):  # the tables with `total` completed runs in all
        lowest, highest = max(0, total - n_old), min(n_new, total)
        done_new = np.arange(lowest, highest + 1)
        pmf = null_distributions.hypergeom_pmf(done_new, n_old + n_new, total, n_new)
        as_likely = pmf[None, :] <= pmf[:, None] * (1 + 1e-7)  # scipy's relative tolerance
        tail = (pmf[None, :] * as_likely).sum(axis=1)
        p[total - done_new, done_new] = np.minimum(tail, 1.0)
    return p


def share_gate_power(share_old: float, n: int, m: int, threshold: float, alpha: float = ALPHA) -> GatePower:
    """The drops of the completed share (percentage points, from `share_old`) the completed gate at `threshold`
    points, and Fisher's test alone, catch 80% of the time; inf when even a drop to 0 is caught less often."""
    if n == 0 or m == 0 or smallest_p(n, m) > alpha:
        return GatePower(math.inf, math.inf)
    significant = fisher_p_values(n, m) <= alpha
    drop = np.arange(n + 1)[:, None] / n - np.arange(m + 1)[None, :] / m  # observed drop of each table
    gate, test = significant & (drop * 100 > threshold), significant & (drop > 0)
    old = null_distributions.binom_pmf(np.arange(n + 1), n, share_old)
    drops = np.arange(0.0, share_old * 100 + 0.25, 0.5)  # the drops tried, in points, every half point
    # every drop's new binomial at once (one row a drop): 200 calls of scipy's pmf once took most of a compare's gating
    new = null_distributions.binom_pmf(np.arange(m + 1)[None, :], m, np.maximum(share_old - drops / 100, 0.0)[:, None])
    found = [math.inf, math.inf]
    for i, decides in enumerate((gate, test)):
        chance = new @ (old @ decides)  # per drop: the chance of a table the test decides, summed over them
        reached = np.flatnonzero(chance >= POWER)
        if reached.size:
            found[i] = float(drops[reached[0]])
    return GatePower(*found)


def runs_for(catch: float, threshold: float, cv: float, pooled: int, alpha: float = ALPHA) -> int:
    """The fewest runs a night needs, against `pooled` times as many baseline runs, for a gate at `threshold`
    percent to catch a `catch` percent change 80% of the time, with runs varying by `cv` (coefficient of
    variation)."""
    sigma = math.sqrt(math.log1p(cv**2))  # the log-normal's sigma for that coefficient of variation
    runs = 1
    while runs * runs * pooled <= MAX_CELLS:
        if _simulated(n=runs * pooled, m=runs, sigma=sigma, threshold=threshold, alpha=alpha).catches <= catch:
            return runs
        runs += 1
    raise ValueError(f"no number of runs up to {runs - 1} catches {catch}% at a {threshold}% threshold with cv {cv}")
