"""compare's tests computed without scipy.stats (bench.analyze.null_distributions) give scipy.stats' p-values and
intervals, to floating-point rounding, and compare itself no longer imports it."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from bench.analyze import null_distributions


def test_fishers_p_values_are_scipys_for_every_table() -> None:
    for n_old in range(0, 31, 3):
        for n_new in [0, 1, 2, 5, 9, 17, 30, 44]:
            for done_old in range(n_old + 1):
                for done_new in range(n_new + 1):
                    table = [[done_new, n_new - done_new], [done_old, n_old - done_old]]
                    expected = stats.fisher_exact(table).pvalue
                    found = null_distributions.fisher_p(done_old, n_old, done_new, n_new)
                    assert math.isclose(found, expected, rel_tol=1e-12), table


def test_the_exact_rank_test_is_scipys_up_to_a_hundred_runs_a_side() -> None:
    rng = random.Random(5)
    designs = [(rng.randint(1, 30), rng.randint(1, 30)) for _ in range(150)] + [(100, 100), (60, 140), (1, 200)]
    for n, m in designs:
        old = [rng.random() for _ in range(n)]
        new = [rng.random() * rng.uniform(0.8, 1.5) for _ in range(m)]
        expected = stats.mannwhitneyu(new, old, alternative="two-sided", method="exact").pvalue
        assert math.isclose(null_distributions.rank_p_exact(old, new), expected, rel_tol=1e-11), (n, m)


def test_the_normal_rank_test_is_scipys_with_ties() -> None:
    rng = random.Random(6)
    for _ in range(200):
        n, m = rng.randint(1, 150), rng.randint(1, 150)
        old = [float(rng.randint(0, 9)) for _ in range(n)]
        new = [float(rng.randint(0, 11)) for _ in range(m)]
        expected = stats.mannwhitneyu(new, old, alternative="two-sided", method="asymptotic").pvalue
        assert math.isclose(null_distributions.rank_p_normal(old, new), expected, rel_tol=1e-12), (old, new)
    assert null_distributions.rank_p_normal([3.0] * 12, [3.0] * 12) == 1.0  # every value tied: scipy clips to 1


@pytest.mark.parametrize(("done", "n"), [(0, 10), (10, 10), (7, 10), (74, 100), (3, 5), (1, 1)])
def test_wilson_intervals_are_scipys(done: int, n: int) -> None:
    expected = stats.binomtest(done, n).proportion_ci(method="wilson")
    low, high = null_distributions.wilson_interval(done, n)
    assert math.isclose(low, expected.low, abs_tol=1e-14) and math.isclose(high, expected.high, abs_tol=1e-14)


def test_the_pmfs_and_the_normal_quantile_are_scipys() -> None:
    drawn = np.arange(0, 51)
    expected = stats.hypergeom.pmf(drawn, 200, 100, 50)
    assert np.allclose(null_distributions.hypergeom_pmf(drawn, 200, 100, 50), expected, rtol=1e-12, atol=0)
    shares = np.array([0.0, 0.3, 0.74, 1.0])[:, None]
    k = np.arange(101)[None, :]
    assert np.allclose(
        null_distributions.binom_pmf(k, 100, shares), stats.binom.pmf(k, 100, shares), rtol=1e-11, atol=1e-300
    )
    assert math.isclose(null_distributions.normal_quantile(0.975), stats.norm.ppf(0.975), rel_tol=1e-15)


@pytest.mark.usefixtures("child_processes")
def test_compare_of_many_runs_leaves_scipy_stats_unimported() -> None:
    """Its import was most of a 1,000-row compare's start-up: exact, normal and Fisher tests and the gates' power."""
    probe = (
        "import sys; from bench.analyze import power, stats; "
        "stats.rank_test([1.0, 2.5, 3.0], [4.0, 5.0]); stats.rank_test([1.0] * 10 + [2.0], [2.0] * 12); "
        "stats.share_test(3, 10, 7, 10); stats.share_change_interval(3, 10, 7, 10); "
        "stats.excluded_pairs(30, 30, 0.05); "
        "power.share_gate_power(0.7, 20, 20, 10.0); print('scipy.stats' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
