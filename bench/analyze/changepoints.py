"""Change points in a nightly series: MongoDB's E-Divisive with means (signal-processing-algorithms).

Chosen over Apache Otava: one documented function, `e_divisive(series, pvalue, permutations)`, that has kept its
signature since the package's 1.x releases, a compiled core, and few dependencies. Otava 0.8 pins numpy 2.2.0
exactly and pulls in about fifty packages (BigQuery, Postgres, Slack and Graphite clients) for its data sources,
and reaches the same algorithm through modules it does not document as an API.

E-Divisive finds where the distribution of the series shifts (level, spread) and keeps a split only when a
permutation test finds it significant; its permutations are drawn with a fixed seed, so the same nights always
give the same change points.
"""

from __future__ import annotations

from collections.abc import Sequence

from signal_processing_algorithms.determinism import deterministic_numpy_random
from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

SEED = 1234
PERMUTATIONS = 199
MIN_POINTS = 6  # fewer nights than this: no change point can be told from noise


def change_points(values: Sequence[float], alpha: float = 0.05) -> list[int]:
    """Indexes where a new regime starts (the first value after the change), sorted."""
    if len(values) < MIN_POINTS:
        return []
    with deterministic_numpy_random(SEED):
        return sorted(e_divisive([float(v) for v in values], pvalue=alpha, permutations=PERMUTATIONS))
