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

from bench.analyze.changes import metric_change
from bench.analyze.gates import Gate, tripped
from bench.analyze.stats import ALPHA
from bench.results.row import ResultRow

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
