"""Intervals that never contradict the verdicts: each is its test turned around, so 0 lies outside the interval
exactly when the test calls the change beyond noise, and runs too few for any test give no bounds at all."""

from __future__ import annotations

import math

import numpy as np

from bench.analyze import power, stats
from bench.analyze.changes import metric_change
from bench.results.row import ResultRow


def rows(values: list[float], done: bool = True) -> list[ResultRow]:
    return [
        ResultRow(f"r{i}", wall_s=v, stop_reason="done", hidden_total=6, hidden_passed=6 if done else 3)
        for i, v in enumerate(values)
    ]


def test_zero_is_outside_the_interval_exactly_when_the_rank_test_is_significant() -> None:
    rng = np.random.default_rng(3)
    checked = disagreements = 0
    for _ in range(400):
        n, m = int(rng.integers(2, 13)), int(rng.integers(2, 13))
        old = list(rng.lognormal(math.log(100), 0.2, n))
        new = list(rng.lognormal(math.log(100 * rng.uniform(0.8, 1.4)), 0.2, m))
        low, high = stats.change_interval(old, new)  # type: ignore[misc]
        significant = stats.rank_test(old, new).p <= stats.ALPHA
        checked += 1
        disagreements += significant == (low <= 0 <= high)
    assert checked == 400 and disagreements == 0


def test_runs_too_few_for_any_test_leave_the_interval_unbounded_next_to_too_few_runs() -> None:
    """Every new run slower than every old one, 3 vs 3: the bootstrap said "+46% to +346%" beside "too few runs"."""
    change = metric_change("wall_s", rows([9.8, 20.5, 23.5]), rows([34.1, 42.2, 43.8]))
    assert change.interval == "unbounded (too few runs)" and change.verdict(stats.ALPHA).startswith("too few runs")
    done = metric_change("completed", rows([1.0] * 3), rows([1.0] * 3, done=False))
    assert done.interval == "unbounded (too few runs)" and done.verdict(stats.ALPHA).startswith("too few runs")


def test_a_share_interval_holds_zero_whenever_fishers_test_finds_no_change() -> None:
    for done_new in range(0, 11):
        old = rows([1.0] * 10)[:7] + rows([1.0] * 3, done=False)
        new = rows([1.0] * done_new) + rows([1.0] * (10 - done_new), done=False)
        change = metric_change("completed", old, new)
        low, high = (float(part.split()[0]) for part in change.interval.replace("±", "").split(" to "))
        assert (low <= 0 <= high) == (change.test is not None and change.test.p > stats.ALPHA), change


def test_the_power_simulations_fisher_p_values_are_scipys_for_every_table() -> None:
    """bench.analyze.power computes Fisher's test for all tables of a design at once: each p-value must be the one
    scipy.stats.fisher_exact gives (what compare itself reports), small designs and uneven ones alike."""
    from scipy.stats import fisher_exact

    for n_old, n_new in [(1, 1), (3, 5), (8, 8), (20, 7), (40, 40)]:
        computed = power.fisher_p_values(n_old, n_new)
        assert computed.shape == (n_old + 1, n_new + 1)
        for done_old in range(n_old + 1):
            for done_new in range(n_new + 1):
                table = [[done_old, n_old - done_old], [done_new, n_new - done_new]]
                expected = fisher_exact(table).pvalue
                assert math.isclose(computed[done_old, done_new], expected, rel_tol=1e-9, abs_tol=1e-15), table
