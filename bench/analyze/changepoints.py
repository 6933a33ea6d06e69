"""Change points in a nightly series: E-Divisive with means (Matteson and James, 2014), in a few lines of numpy.

E-Divisive finds where the distribution of a series shifts (level, spread). Each step takes, within the segments
that the change points found so far cut the series into, the split where the energy statistic between the values
before and after it is largest, and keeps it only when a permutation test finds it significant: the values, shuffled
within their segments, must rarely give a split as strong. The shuffles come from numpy's legacy generator, seeded,
whose stream numpy keeps the same across its versions: the same nights give the same change points on every Python
and numpy the lock installs.

It replaced MongoDB's signal-processing-algorithms (no wheel, Python 3.11 at most): the same statistic (distances
|x - y|, the V-statistic form) and the same search, with 999 permutations instead of its 199 so that a split close
to the significance level is decided by the data rather than by the draw. tests/bench/analyze/test_changepoints.py
checks it against what that package found on the synthetic series of docs/compare.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

SEED = 1234
PERMUTATIONS = 999
MIN_POINTS = 6  # fewer nights than this: no change point can be told from noise
BATCH_CELLS = 4_000_000  # distance-matrix cells per batch of shuffles (32 MB of float64): long series stay in memory


def split_statistics(distances: np.ndarray) -> np.ndarray:
    """For an n x n distance matrix (or a stack of them), the statistic of each split k = 1..n-1 of the values into
    [0, k) and [k, n): k (n - k) / n times the energy distance 2 E|X - Y| - E|X - X'| - E|Y - Y'|."""
    n = distances.shape[-1]
    sums = distances.cumsum(axis=-1).cumsum(axis=-2)  # sums[i, j]: the distances among rows <= i, columns <= j
    k = np.arange(1, n)
    within_x = sums[..., k - 1, k - 1]
    cross = sums[..., k - 1, n - 1] - within_x
    within_y = sums[..., n - 1, n - 1][..., None] - within_x - 2 * cross
    x, y = k.astype(float), (n - k).astype(float)
    return x * y / n * (2 * cross / (x * y) - within_x / x**2 - within_y / y**2)


def strongest_shuffled(distances: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """The strongest split of each of PERMUTATIONS shuffles of one segment."""
    n = len(distances)
    orders = np.argsort(rng.random_sample((PERMUTATIONS, n)), axis=1)
    batches = np.array_split(orders, max(1, PERMUTATIONS * n * n // BATCH_CELLS))
    return np.concatenate([split_statistics(distances[b[:, :, None], b[:, None, :]]).max(axis=1) for b in batches])


def next_change(distances: np.ndarray, found: list[int], alpha: float, rng: np.random.RandomState) -> int | None:
    """The strongest split within the segments between the change points found, if it is significant."""
    bounds = [0, *sorted(found), len(distances)]
    segments = [(a, b) for a, b in itertools.pairwise(bounds) if b - a >= 2]
    if not segments:
        return None
    splits = [(a, split_statistics(distances[a:b, a:b])) for a, b in segments]
    strongest = [(float(stats.max()), a + 1 + int(stats.argmax())) for a, stats in splits]
    statistic, at = max(strongest, key=lambda split: split[0])  # the first of equals: the search goes left to right
    shuffled = np.max([strongest_shuffled(distances[a:b, a:b], rng) for a, b in segments], axis=0)
    # as strong or stronger, allowing for the rounding of sums taken in another order
    as_strong = int(np.count_nonzero(shuffled >= statistic * (1 - 1e-9)))
    p_value = (as_strong + 1) / (PERMUTATIONS + 1)  # the series' own order counts as one of the orders
    return at if statistic > 0 and p_value <= alpha else None


def change_points(values: Sequence[float], alpha: float = 0.05) -> list[int]:
    """Indexes where a new regime starts (the first value after the change), sorted."""
    if len(values) < MIN_POINTS:
        return []
    series = np.asarray(values, dtype=float)
    distances = np.abs(series[:, None] - series[None, :])
    rng = np.random.RandomState(SEED)
    found: list[int] = []
    while (change := next_change(distances, found, alpha, rng)) is not None:
        found.append(change)
    return sorted(found)
