"""The null distributions compare's tests read, computed here with exact integers rather than by importing
scipy.stats: that import alone was about 0.85 s of a 1,000-row compare's 2 s (bench/analyze/stats.py says which test
still needs scipy). Each function gives what scipy.stats gives for the same input, to floating-point rounding
(tests/bench/analyze/test_null_distributions.py checks them against scipy).

- Mann–Whitney's U without ties: the count of arrangements of n old and m new runs with each U is the coefficient of
  the Gaussian binomial [n+m choose n] (a product of (1 - q^(m+i)) / (1 - q^i) for i = 1..n), kept to the terms a
  tail needs.
- With ties and many runs: the normal approximation with the tie correction and a continuity correction of 1/2.
- Fisher's exact test: the tables with the same margins at most as likely as the one seen (relative tolerance 1e-14),
  from binomial coefficients.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from statistics import NormalDist

import numpy as np

LIKELY_AS_SEEN = Fraction(1) + Fraction(1, 10**14)  # tables this close in probability count as likely as the one seen


def normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def u_statistic(old: Sequence[float], new: Sequence[float]) -> tuple[float, list[int]]:
    """U of the new runs (pairs in which a new run is the larger, ties counted a half) and the sizes of tied groups."""
    ranks: dict[float, float] = {}
    position = 1
    counts = Counter([*old, *new])
    for value in sorted(counts):
        ranks[value] = position + (counts[value] - 1) / 2  # the average rank of a tied group
        position += counts[value]
    rank_sum = sum(ranks[value] for value in new)
    return rank_sum - len(new) * (len(new) + 1) / 2, [t for t in counts.values() if t > 1]


def u_counts(n: int, m: int, up_to: int) -> list[int]:
    """How many of the C(n+m, n) arrangements of n and m untied runs give U = 0..up_to."""
    counts = np.zeros(up_to + 1, dtype=object)
    counts[:] = 0
    counts[0] = 1
    for i in range(1, n + 1):
        step = m + i
        if step <= up_to:
            counts[step:] = counts[step:] - counts[: up_to + 1 - step]  # times (1 - q^(m+i))
        padded = np.zeros(-(-(up_to + 1) // i) * i, dtype=object)
        padded[:] = 0
        padded[: up_to + 1] = counts
        counts = np.cumsum(padded.reshape(-1, i), axis=0).ravel()[: up_to + 1]  # divided by (1 - q^i)
    return [int(count) for count in counts]


def rank_p_exact(old: Sequence[float], new: Sequence[float]) -> float:
    """Two-sided p-value of Mann–Whitney's U with no ties: twice the chance of a U at least as far from the middle."""
    n, m = len(old), len(new)
    u, _ = u_statistic(old, new)
    nearest = n * m - round(max(u, n * m - u))  # the tail on the near side of 0, by symmetry
    tail = sum(u_counts(min(n, m), max(n, m), nearest))
    return min(1.0, float(Fraction(2 * tail, math.comb(n + m, n))))


def rank_p_normal(old: Sequence[float], new: Sequence[float]) -> float:
    """Two-sided p-value of Mann–Whitney's U by the normal approximation, corrected for ties and continuity."""
    n, m = len(old), len(new)
    u, ties = u_statistic(old, new)
    total = n + m
    tie_term = sum(t**3 - t for t in ties)
    sd = math.sqrt(n * m / 12 * ((total + 1) - tie_term / (total * (total - 1))))
    if sd == 0:
        return 1.0
    z = (max(u, n * m - u) - n * m / 2 - 0.5) / sd
    return min(1.0, 2 * normal_sf(z))


def fisher_p(done_old: int, n_old: int, done_new: int, n_new: int) -> float:
    """Fisher's exact test, two-sided, on done / not done: 1 when a row or column of the table is empty."""
    done = done_old + done_new
    if 0 in (n_old, n_new, done, n_old + n_new - done):
        return 1.0
    weights = {
        x: math.comb(n_new, x) * math.comb(n_old, done - x) for x in range(max(0, done - n_old), min(n_new, done) + 1)
    }
    seen = weights[done_new] * LIKELY_AS_SEEN
    if seen >= max(weights.values()):
        return 1.0
    tail = sum(weight for weight in weights.values() if weight <= seen)
    return min(1.0, float(Fraction(tail, math.comb(n_old + n_new, done))))


def hypergeom_pmf(drawn: np.ndarray, population: int, marked: int, draws: int) -> np.ndarray:
    """P(drawn marked items) in `draws` from `population` holding `marked`, each exact to rounding."""
    whole = math.comb(population, draws)
    return np.array([math.comb(marked, k) * math.comb(population - marked, draws - k) / whole for k in drawn.tolist()])


def binom_pmf(k: np.ndarray, n: int, share: np.ndarray | float) -> np.ndarray:
    """P(k of n) at each share (broadcast), from log-gamma; 0 ** 0 counts as 1."""
    k, share = np.asarray(k, dtype=float), np.asarray(share, dtype=float)
    log_comb = (
        np.vectorize(math.lgamma)(n + 1) - np.vectorize(math.lgamma)(k + 1) - np.vectorize(math.lgamma)(n - k + 1)
    )
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) in a branch np.where leaves out
        log_p = np.where(k == 0, 0.0, k * np.log(share)) + np.where(k == n, 0.0, (n - k) * np.log1p(-share))
    return np.exp(log_comb + log_p)


def wilson_interval(done: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a share, 0 and 1 as its bounds where every run or none is done."""
    z = normal_quantile(0.5 + confidence / 2)
    share = done / n
    center = (2 * n * share + z**2) / (2 * (n + z**2))
    half = z / (2 * (n + z**2)) * math.sqrt(4 * n * share * (1 - share) + z**2)
    return 0.0 if done == 0 else center - half, 1.0 if done == n else center + half
