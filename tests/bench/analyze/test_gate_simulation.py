"""The gate on synthetic runs with known effects: how often it fails a build for nothing, and how often it catches
a real slowdown.

Noise model: wall times log-normal around 100 s with a coefficient of variation of 15% (runs of one configuration
that take the same path; the CPU example's part2 runs vary by 3%, a GPU server's timings by less). The completed
share: each run completes with probability 0.8, the same in both files. A fixed seed: the rates are the same on
every run of the test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bench.analyze.changes import metric_change
from bench.analyze.gates import Gate, power_text, stated_power, tripped
from bench.analyze.power import POWER, GatePower, reps_for, share_gate_power
from bench.analyze.stats import ALPHA
from bench.results.row import ResultRow

# Thousands of simulated nights: 14 s of CPU in all, out of the fast tier.
pytestmark = pytest.mark.slow

SEED = 11
TRIALS = 600
CV = 0.15
SIGMA = math.sqrt(math.log(1 + CV**2))  # the log-normal's sigma for that coefficient of variation


def rows(walls: np.ndarray, completed: np.ndarray | None = None) -> list[ResultRow]:
    done = completed if completed is not None else np.ones(len(walls), dtype=bool)
    return [
        ResultRow(
            f"r{i}", wall_s=round(float(wall), 2), stop_reason="done", hidden_total=6, hidden_passed=6 if ok else 4
        )
        for i, (wall, ok) in enumerate(zip(walls, done, strict=True))
    ]


def wall_gate_rate(slowdown: float, runs: int, rng: np.random.Generator) -> float:
    gate = Gate("wall_s", 10.0)
    fired = 0
    for _ in range(TRIALS):
        old = rng.lognormal(math.log(100), SIGMA, runs)
        new = rng.lognormal(math.log(100 * slowdown), SIGMA, runs)
        fired += tripped(gate, metric_change("wall_s", rows(old), rows(new)), ALPHA)
    return fired / TRIALS


def test_the_wall_time_gate_rarely_fires_for_nothing_and_catches_a_30_percent_slowdown() -> None:
    rng = np.random.default_rng(SEED)
    false_alarms = wall_gate_rate(1.0, 10, rng)
    detected = wall_gate_rate(1.3, 10, rng)
    print(f"wall_s:10 gate, 10 runs a side, CV {CV:.0%}: false alarms {false_alarms:.1%}, caught {detected:.1%}")
    assert false_alarms <= ALPHA
    assert detected >= 0.8
    assert wall_gate_rate(1.3, 3, rng) == 0.0  # 3 vs 3 runs cannot reach p = 0.05: they never fail a build


def test_the_completed_gate_rarely_fires_for_nothing() -> None:
    rng = np.random.default_rng(SEED)
    gate, fired = Gate("completed", 0.0), 0
    for _ in range(TRIALS):
        walls = np.full(10, 100.0)
        old, new = rows(walls, rng.random(10) < 0.8), rows(walls, rng.random(10) < 0.8)
        fired += tripped(gate, metric_change("completed", old, new), ALPHA)
    print(f"completed gate, 10 runs a side, p(completed) 0.8: false alarms {fired / TRIALS:.1%}")
    assert fired / TRIALS <= ALPHA


# The nightly's gate (wall_s:25) in two designs: 10 runs a side, and 3 runs against a baseline of 21 pooled (7
# nights of 3). For each true change: how often it fails (a false alarm at 0%), and how often it says indeterminate.
DESIGNS = {"10 vs 10": (10, 10), "3 vs 21": (21, 3)}
CHANGES = [0.0, 15.0, 25.0, 30.0]
POWER_TRIALS = 300
CHECK_TRIALS = 500


def stated(gate: Gate, old_runs: int, new_runs: int, rng: np.random.Generator, trials: int = 100) -> GatePower:
    """What the gate typically states for these designs (the median over sets of runs of no change: a spread
    estimated from a few runs is itself noisy)."""
    found = []
    for _ in range(trials):
        old, new = rng.lognormal(math.log(100), SIGMA, old_runs), rng.lognormal(math.log(100), SIGMA, new_runs)
        power = stated_power(gate, metric_change(gate.metric, rows(old), rows(new)), ALPHA)
        assert power is not None
        found.append((power.catches, power.test_detects))
    catches, detects = np.median(np.array(found), axis=0)
    return GatePower(float(catches), float(detects))


def nightly_gate(old_runs: int, new_runs: int, change: float, rng: np.random.Generator) -> tuple[float, float, float]:
    """(share failed, share indeterminate, median change the gate says it catches) of the wall_s:25 gate."""
    gate, failed, unsure, said = Gate("wall_s", 25.0), 0, 0, []
    for _ in range(POWER_TRIALS):
        old = rng.lognormal(math.log(100), SIGMA, old_runs)
        new = rng.lognormal(math.log(100 * (1 + change / 100)), SIGMA, new_runs)
        result = metric_change("wall_s", rows(old), rows(new))
        failed += tripped(gate, result, ALPHA)
        unsure += not tripped(gate, result, ALPHA) and power_text(gate, result, ALPHA)[1]
        power = stated_power(gate, result, ALPHA)
        said.append(power.catches if power else math.nan)
    return failed / POWER_TRIALS, unsure / POWER_TRIALS, float(np.nanmedian(said))


def test_the_nightly_gate_states_its_power_and_is_indeterminate_where_it_lacks_it() -> None:
    rng = np.random.default_rng(SEED)
    table = {(design, change): nightly_gate(*DESIGNS[design], change, rng) for design in DESIGNS for change in CHANGES}
    for (design, change), (failed, unsure, catches) in table.items():
        print(
            f"wall_s:25, {design}, CV {CV:.0%}, change +{change:.0f}%: failed {failed:.1%}, "
            f"indeterminate {unsure:.1%}, says it catches +{catches:.0f}%"
        )
    assert table[("10 vs 10", 0.0)][0] <= ALPHA and table[("3 vs 21", 0.0)][0] <= ALPHA  # false alarms
    assert table[("10 vs 10", 25.0)][0] < 0.6  # a change at the threshold: caught about half the time, not 80%
    assert table[("10 vs 10", 25.0)][2] > 30  # so the gate never claims to catch it (the rank test's 21% did)
    assert table[("3 vs 21", 0.0)][1] > 0.5  # 3 runs against 21 cannot resolve 25%: it says so


def gate_fail_rate(gate: Gate, old_runs: int, new_runs: int, change: float, rng: np.random.Generator) -> float:
    fired = 0
    for _ in range(CHECK_TRIALS):
        old = rng.lognormal(math.log(100), SIGMA, old_runs)
        new = rng.lognormal(math.log(100 * (1 + change / 100)), SIGMA, new_runs)
        fired += tripped(gate, metric_change(gate.metric, rows(old), rows(new)), ALPHA)
    return fired / CHECK_TRIALS


@pytest.mark.parametrize("design", DESIGNS)
def test_the_change_a_gate_says_it_catches_is_caught_four_times_in_five(design: str) -> None:
    """The gate's own decision (threshold and test at alpha), at the change it states: fails in 80% of trials."""
    rng = np.random.default_rng(SEED)
    old_runs, new_runs = DESIGNS[design]
    gate = Gate("wall_s", 25.0)
    said = stated(gate, old_runs, new_runs, rng)
    rate = gate_fail_rate(gate, old_runs, new_runs, said.catches, rng)
    print(f"wall_s:25, {design}: says it catches +{said.catches:.1f}%, caught {rate:.1%} of {CHECK_TRIALS}")
    assert abs(rate - POWER) <= 0.05


def test_the_change_the_rank_test_alone_detects_is_detected_four_times_in_five() -> None:
    rng = np.random.default_rng(SEED)
    for old_runs, new_runs in DESIGNS.values():
        said = stated(Gate("wall_s", 0.0), old_runs, new_runs, rng)
        rate = gate_fail_rate(Gate("wall_s", 0.0), old_runs, new_runs, said.test_detects, rng)
        print(f"{new_runs} vs {old_runs}: the test detects +{said.test_detects:.1f}%, detected {rate:.1%}")
        assert abs(rate - POWER) <= 0.05


def test_the_completed_gate_states_its_own_power() -> None:
    """Completion at 0.8 in both designs of 20 runs a side: at the drop the gate says it catches, it fails 80%."""
    rng = np.random.default_rng(SEED)
    gate, runs, share = Gate("completed", 10.0), 20, 0.8
    said = share_gate_power(share, runs, runs, gate.limit, ALPHA)
    walls, fired = np.full(runs, 100.0), 0
    for _ in range(CHECK_TRIALS):
        old = rows(walls, rng.random(runs) < share)
        new = rows(walls, rng.random(runs) < share - said.catches / 100)
        fired += tripped(gate, metric_change("completed", old, new), ALPHA)
    caught = fired / CHECK_TRIALS
    print(f"completed:10, {runs} vs {runs} at 0.8: says it catches -{said.catches:.1f} pp, caught {caught:.1%}")
    assert abs(caught - POWER) <= 0.05


def test_an_underpowered_gate_says_so_and_what_reps_would_do() -> None:
    rng = np.random.default_rng(SEED)
    gate = Gate("wall_s", 25.0)
    old, new = rng.lognormal(math.log(100), SIGMA, 21), rng.lognormal(math.log(100), SIGMA, 3)
    said, indeterminate, numbers = power_text(gate, metric_change("wall_s", rows(old), rows(new)), ALPHA)
    assert indeterminate and "21 vs 3 runs can detect only" in said and f"REPS={numbers['reps_needed']} would" in said
    reps = reps_for(21, 3, SIGMA, 25.0)  # at the true spread: the test alone then reaches 80% at the threshold
    assert reps is not None and reps > 3
    enough, fewer = rank_test_power(7 * reps, reps, 25.0, rng), rank_test_power(7 * (reps - 1), reps - 1, 25.0, rng)
    print(f"REPS={reps} ({7 * reps} vs {reps}): the test detects +25% in {enough:.1%}; one fewer: {fewer:.1%}")
    assert enough >= POWER - 0.05 and fewer < POWER


def rank_test_power(old_runs: int, new_runs: int, change: float, rng: np.random.Generator) -> float:
    """The exact rank test the gates use (scipy's, bench.analyze.stats.rank_test), on CHECK_TRIALS sets at once."""
    old = rng.lognormal(math.log(100), SIGMA, (CHECK_TRIALS, old_runs))
    new = rng.lognormal(math.log(100 * (1 + change / 100)), SIGMA, (CHECK_TRIALS, new_runs))
    p = stats.mannwhitneyu(new, old, alternative="two-sided", method="exact", axis=1).pvalue
    return float(np.mean(p <= ALPHA))
