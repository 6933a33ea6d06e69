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

from bench.analyze.changes import metric_change
from bench.analyze.gates import Gate, detectable, power_text, tripped
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


def nightly_gate(old_runs: int, new_runs: int, change: float, rng: np.random.Generator) -> tuple[float, float, float]:
    """(share failed, share indeterminate, median MDE stated) of the wall_s:25 gate over POWER_TRIALS trials."""
    gate, failed, unsure, stated = Gate("wall_s", 25.0), 0, 0, []
    for _ in range(POWER_TRIALS):
        old = rng.lognormal(math.log(100), SIGMA, old_runs)
        new = rng.lognormal(math.log(100 * (1 + change / 100)), SIGMA, new_runs)
        result = metric_change("wall_s", rows(old), rows(new))
        failed += tripped(gate, result, ALPHA)
        unsure += not tripped(gate, result, ALPHA) and power_text(gate, result, ALPHA)[1]
        stated.append(detectable(gate, result, ALPHA))
    return failed / POWER_TRIALS, unsure / POWER_TRIALS, float(np.median(stated))


def test_the_nightly_gate_states_its_power_and_is_indeterminate_where_it_lacks_it() -> None:
    rng = np.random.default_rng(SEED)
    table = {(design, change): nightly_gate(*DESIGNS[design], change, rng) for design in DESIGNS for change in CHANGES}
    for (design, change), (failed, unsure, mde) in table.items():
        print(f"wall_s:25, {design}, CV {CV:.0%}, change +{change:.0f}%: failed {failed:.1%}, "
              f"indeterminate {unsure:.1%}, stated MDE {mde:.0f}%")  # fmt: skip
    assert table[("10 vs 10", 0.0)][0] <= ALPHA and table[("3 vs 21", 0.0)][0] <= ALPHA  # false alarms
    assert table[("10 vs 10", 30.0)][0] >= 0.55  # caught more often than not: the threshold is near the change
    assert table[("10 vs 10", 0.0)][1] < 0.35  # 10 runs a side can resolve 25%: mostly not indeterminate
    assert table[("3 vs 21", 0.0)][1] > 0.5  # 3 runs against 21 cannot (MDE above 25%): it says so
    assert table[("10 vs 10", 0.0)][2] < 25 < table[("3 vs 21", 0.0)][2]


def test_the_stated_detectable_change_is_detected_four_times_in_five() -> None:
    """The rank test alone (no threshold), at the MDE the gate states: significant about 80% of the time."""
    rng = np.random.default_rng(SEED)
    for old_runs, new_runs in DESIGNS.values():
        stated = []
        for _ in range(40):  # what the gate typically states: one set of runs' spread is itself noisy
            old, new = rng.lognormal(math.log(100), SIGMA, old_runs), rng.lognormal(math.log(100), SIGMA, new_runs)
            stated.append(detectable(Gate("wall_s", 0.0), metric_change("wall_s", rows(old), rows(new)), ALPHA))
        mde = float(np.median(stated))
        hits = 0
        for _ in range(POWER_TRIALS):
            before = rng.lognormal(math.log(100), SIGMA, old_runs)
            after = rng.lognormal(math.log(100 * (1 + mde / 100)), SIGMA, new_runs)
            hits += metric_change("wall_s", rows(before), rows(after)).test.p <= ALPHA  # type: ignore[union-attr]
        print(f"{new_runs} vs {old_runs}: stated MDE {mde:.0f}%, detected {hits / POWER_TRIALS:.0%}")
        assert 0.65 <= hits / POWER_TRIALS <= 0.9  # 70% at 10 vs 10, 79% at 3 vs 21: close to the 80% aimed at
