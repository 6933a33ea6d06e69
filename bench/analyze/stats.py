"""What a handful of runs can show: exact small-sample tests, the smallest p-value n runs can reach, and 95%
intervals for a change that never contradict the tests. The tests give scipy.stats' p-values; all but the
permutation test are computed in bench/analyze/null_distributions.py, so that compare need not import scipy.stats.

- A measured metric (wall_s, tokens, MiB, hidden tests passed, ...): the Mann–Whitney U test on the runs,
  two-sided. Exact when no two values tie; with ties, the exact permutation distribution of U (every arrangement
  when there are at most PERMUTATIONS, else that many drawn with a fixed seed) while a side has fewer than
  LARGE_SAMPLE runs, and the normal approximation with scipy's tie correction from there on (accurate at that size,
  and a 100-run group costs milliseconds instead of seconds).
  Ranks, not means: one fast outlier cannot hide a slowdown of every other run.
- The completed share: Fisher's exact test on completed / not completed.
- The smallest two-sided p-value of either test with n and m runs is 2 / C(n+m, n) (every run of one side beyond
  every run of the other): 0.10 for 3 vs 3. When that is above alpha, no difference can count and the verdict
  says so, with the runs it would take.
- Intervals are the tests turned around, so that they agree with the verdicts: for a measured metric, the changes
  (in percent) by which the old runs could be scaled and the rank test still not tell them from the new runs
  (Moses' interval: order statistics of the pairwise ratios, cut where U's exact distribution puts alpha/2); when
  the runs are too few for any test to count, the interval is unbounded. For the completed share, Newcombe's
  hybrid score interval (from Wilson's score intervals), reaching to 0 when Fisher's test finds no change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from bench.analyze import null_distributions

if TYPE_CHECKING:
    from types import ModuleType

ALPHA = 0.05
SEED = 20261130  # fixed: the same files always give the same p-values and intervals
PERMUTATIONS = 20_000
LARGE_SAMPLE = 10  # runs a side from which tied values are tested with the normal approximation
EXACT_U_CELLS = 400  # n x m up to which U's exact distribution is computed for intervals; normal beyond


def scipy_stats() -> ModuleType:
    """scipy.stats, imported when a test needs it (the permutation test, the paired tests): its import costs about a
    second, and `bench report` and `bench history` import this module for its names alone."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Test:
    """A two-sided test of "no change" between the old and the new runs."""

    p: float
    n_old: int
    n_new: int

    @property
    def smallest_p(self) -> float:
        return smallest_p(self.n_old, self.n_new)


def smallest_p(n_old: int, n_new: int) -> float:
    """The smallest two-sided p-value an exact rank or Fisher test can give with these numbers of runs."""
    if n_old < 1 or n_new < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_old + n_new, n_old))


def runs_needed(n_old: int, n_new: int, alpha: float = ALPHA) -> tuple[int, int]:
    """The fewest runs that can reach p <= alpha: more new runs first (the old ones are what you have), up to as
    many as the old side, then one more on each side."""
    n_old, n_new = max(n_old, 1), max(n_new, 1)
    while smallest_p(n_old, n_new) > alpha:
        if n_new < n_old:
            n_new += 1
        else:
            n_old, n_new = n_old + 1, n_new + 1
    return n_old, n_new


def rank_test(old: Sequence[float], new: Sequence[float]) -> Test:
    """Mann–Whitney U, two-sided: exact without ties, an exact (or fixed-seed) permutation test of U with them."""
    values = [*old, *new]
    if len(set(values)) == len(values):
        return Test(null_distributions.rank_p_exact(old, new), len(old), len(new))
    if min(len(old), len(new)) < 2 or min(len(old), len(new)) >= LARGE_SAMPLE:
        return Test(null_distributions.rank_p_normal(old, new), len(old), len(new))
    scipy = scipy_stats()  # ties in few runs: permute the tied values themselves (scipy needs two runs a side)
    method = scipy.PermutationMethod(n_resamples=PERMUTATIONS, rng=SEED)
    result = scipy.mannwhitneyu(new, old, alternative="two-sided", method=method)
    return Test(min(1.0, float(result.pvalue)), len(old), len(new))


def share_test(done_old: int, n_old: int, done_new: int, n_new: int) -> Test:
    """Fisher's exact test, two-sided, on done / not done in the old and the new runs."""
    return Test(null_distributions.fisher_p(done_old, n_old, done_new, n_new), n_old, n_new)


def change_interval(old: Sequence[float], new: Sequence[float], alpha: float = ALPHA) -> tuple[float, float] | None:
    """The 1 - alpha interval of the change, in percent: scale factors of the old runs (all values positive) or
    shifts (in percent of the old median) that the two-sided rank test at alpha cannot tell from the new runs.
    (-inf, inf) when the runs are too few for any test to count; None when there is nothing to scale (old median 0
    with non-positive values)."""
    if not old or not new:
        return None
    cut = excluded_pairs(len(old), len(new), alpha)
    if cut == 0:
        return -math.inf, math.inf
    before, after = np.asarray(old, dtype=float), np.asarray(new, dtype=float)
    if before.min() > 0 and after.min() > 0:
        ratios = _ends((np.log(after)[None, :] - np.log(before)[:, None]).ravel(), cut)
        low, high = ratios[cut - 1], ratios[ratios.size - cut]  # the cut-th from each end
        return float(np.expm1(low) * 100), float(np.expm1(high) * 100)
    base = float(np.median(before))
    if base == 0:
        return None
    shifts = _ends((after[None, :] - before[:, None]).ravel(), cut)
    return float(shifts[cut - 1] / abs(base) * 100), float(shifts[shifts.size - cut] / abs(base) * 100)


def _ends(pairs: np.ndarray, cut: int) -> np.ndarray:
    """The pairwise values with the cut-th from each end in their sorted places (a full sort of 1,000 x 1,000 runs'
    pairs took 0.05 s a metric)."""
    return np.partition(pairs, sorted({cut - 1, pairs.size - cut}))


@cache
def excluded_pairs(n: int, m: int, alpha: float) -> int:
    """The count of U values whose lower tail probability is at most alpha/2 under no change (exact up to
    EXACT_U_CELLS, normal beyond): the interval runs from the cut-th smallest pairwise difference to the cut-th
    largest, the shifts at which the rank test stops rejecting."""
    if n * m <= EXACT_U_CELLS:
        tail = np.cumsum(u_distribution(n, m))
        return int(np.searchsorted(tail, alpha / 2, side="right"))
    mean, sd = n * m / 2, math.sqrt(n * m * (n + m + 1) / 12)
    return max(0, math.floor(mean - null_distributions.normal_quantile(1 - alpha / 2) * sd + 0.5))


@cache
def u_distribution(n: int, m: int) -> np.ndarray:
    """P(U = u) for u = 0..n*m with n and m untied runs and no change. Built up one run at a time: with i old and j
    new runs, the largest of them is either an old run (above all j new ones: U grows by j) or a new run."""
    row: list[np.ndarray] = [np.ones(1) for _ in range(m + 1)]  # no old runs: U is 0 whatever j
    for _ in range(n):
        above: list[np.ndarray] = [np.ones(1)]  # no new runs: U is 0
        for j in range(1, m + 1):
            old_largest, new_largest = np.concatenate([np.zeros(j), row[j]]), above[j - 1]
            size = max(old_largest.size, new_largest.size)
            above.append(
                np.pad(old_largest, (0, size - old_largest.size)) + np.pad(new_largest, (0, size - new_largest.size))
            )
        row = above
    return row[m] / row[m].sum()


def share_change_interval(done_old: int, n_old: int, done_new: int, n_new: int) -> tuple[float, float]:
    """95% interval for the change of a share, in percentage points (Newcombe's hybrid score method)."""
    p_old, p_new = done_old / n_old, done_new / n_new
    low_old, high_old = null_distributions.wilson_interval(done_old, n_old)
    low_new, high_new = null_distributions.wilson_interval(done_new, n_new)
    change = p_new - p_old
    low = change - math.hypot(p_new - low_new, high_old - p_old)
    high = change + math.hypot(high_new - p_new, p_old - low_old)
    return low * 100, high * 100


def verdict(test: Test, alpha: float = ALPHA) -> str:
    """`within noise`, `beyond noise`, or `too few runs to tell (3 vs 3 runs cannot go below p = 0.10; ...)`."""
    if test.smallest_p > alpha:
        n_old, n_new = runs_needed(test.n_old, test.n_new, alpha)
        return (
            f"too few runs to tell ({test.n_old} vs {test.n_new} runs cannot go below p = {fmt_p(test.smallest_p)}; "
            f"needs {n_old} vs {n_new})"
        )
    return "beyond noise" if test.p <= alpha else "within noise"


def significant(test: Test, alpha: float = ALPHA) -> bool:
    return test.p <= alpha


def fmt_p(p: float) -> str:
    """0.10, 0.034, 0.0021, < 0.0001."""
    if p < 0.0001:
        return "< 0.0001"
    return f"{p:.2f}" if p >= 0.095 else f"{p:.2g}"
