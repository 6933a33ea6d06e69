"""What a handful of runs can show: exact small-sample tests, the smallest p-value n runs can reach, and 95%
intervals for a change. Every test and interval comes from scipy.stats.

- A measured metric (wall_s, tokens, MiB, hidden tests passed, ...): the Mann–Whitney U test on the runs,
  two-sided. Exact when no two values tie; with ties, the exact permutation distribution of U (every arrangement
  when there are at most PERMUTATIONS, else that many drawn with a fixed seed); the normal approximation only for
  ties with a single run on one side, where scipy cannot permute (and the verdict is "too few runs" anyway).
  Ranks, not means: one fast outlier cannot hide a slowdown of every other run.
- The completed share: Fisher's exact test on completed / not completed.
- The smallest two-sided p-value of either test with n and m runs is 2 / C(n+m, n) (every run of one side beyond
  every run of the other): 0.10 for 3 vs 3. When that is above alpha, no difference can count and the verdict
  says so, with the runs it would take.
- Intervals: a percentile bootstrap (scipy.stats.bootstrap, fixed seed) of the change of the median, in percent
  of the old median; for the completed share, Newcombe's hybrid score interval built from scipy's Wilson intervals.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

ALPHA = 0.05
SEED = 20261130  # fixed: the same files always give the same p-values and intervals
PERMUTATIONS = 20_000
BOOTSTRAP_RESAMPLES = 2_000


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
    method: str | stats.PermutationMethod = "exact"
    if len(set(values)) < len(values):  # ties: permute the tied values themselves (scipy needs two runs a side)
        single = min(len(old), len(new)) < 2
        method = "asymptotic" if single else stats.PermutationMethod(n_resamples=PERMUTATIONS, rng=SEED)
    result = stats.mannwhitneyu(new, old, alternative="two-sided", method=method)
    return Test(min(1.0, float(result.pvalue)), len(old), len(new))


def share_test(done_old: int, n_old: int, done_new: int, n_new: int) -> Test:
    """Fisher's exact test, two-sided, on done / not done in the old and the new runs."""
    table = [[done_new, n_new - done_new], [done_old, n_old - done_old]]
    return Test(min(1.0, float(stats.fisher_exact(table).pvalue)), n_old, n_new)


def median_change_interval(old: Sequence[float], new: Sequence[float]) -> tuple[float, float] | None:
    """95% bootstrap interval for the change of the median, in percent of the old median (needs two runs a side
    and positive old values)."""
    if len(old) < 2 or len(new) < 2 or min(old) <= 0:
        return None
    if len(set(old)) == 1 and len(set(new)) == 1:  # nothing to resample: the change is what it is
        change = (new[0] - old[0]) / old[0] * 100
        return change, change

    def percent_change(before: np.ndarray, after: np.ndarray, axis: int) -> np.ndarray:
        base = np.median(before, axis=axis)
        return np.asarray((np.median(after, axis=axis) - base) / base * 100)

    with warnings.catch_warnings():  # scipy warns about small or tied samples: the interval is still what it is
        warnings.simplefilter("ignore")
        result = stats.bootstrap(
            (np.asarray(old, dtype=float), np.asarray(new, dtype=float)),
            percent_change,
            vectorized=True,
            n_resamples=BOOTSTRAP_RESAMPLES,
            method="percentile",
            rng=SEED,
        )
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return None if math.isnan(low) or math.isnan(high) else (low, high)


def share_change_interval(done_old: int, n_old: int, done_new: int, n_new: int) -> tuple[float, float]:
    """95% interval for the change of a share, in percentage points (Newcombe's hybrid score method)."""
    p_old, p_new = done_old / n_old, done_new / n_new
    low_old, high_old = stats.binomtest(done_old, n_old).proportion_ci(method="wilson")
    low_new, high_new = stats.binomtest(done_new, n_new).proportion_ci(method="wilson")
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
