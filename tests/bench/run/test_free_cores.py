"""CPU workers started only where a core is free (bench.run.free_cores): the decision under injected load readings,
the line that says why a worker did not start, and a bench that starts only the workers the reading allows."""

from __future__ import annotations

from pathlib import Path

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.run.free_cores import CoreLoad, fit_workers, workers_to_start
from bench.run.runner import Bench
from bench.run.spelling import FROM_MAKE
from bench.run.workers import worker_configs


@pytest.mark.parametrize(
    ("asked", "cores", "load", "started"),
    [
        (2, 2, 0.2, 2),  # an idle 2-core host: both
        (2, 2, 0.6, 1),  # 1.4 cores idle: one whole core, the first worker's
        (2, 2, 7.5, 1),  # every core busy: the first still starts
        (4, 16, 13.2, 3),  # 2.8 cores free: three
        (4, 16, 0.0, 4),
        (1, 2, 9.0, 1),  # one asked: nothing to decide
    ],
)
def test_each_further_worker_starts_only_on_a_free_core(asked: int, cores: int, load: float, started: int) -> None:
    count, note = workers_to_start(asked, CoreLoad(cores, load))
    assert count == started
    assert (note is None) == (count == asked)


def test_the_line_says_how_many_started_and_why_not_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FROM_MAKE, "1")
    _, note = workers_to_start(3, CoreLoad(2, 1.3))
    assert note == (
        "WORKERS=3: 1 started, not 3: 2 cores here at load 1.3 (1-minute average) leave 1 free, and each CPU worker "
        "needs a core of its own (its servers' threads spin); WORKERS=1 runs the same without this line, or run when "
        "the host is quieter"
    )
    assert "at load 1.6 (1-minute average) leave none free" in str(workers_to_start(2, CoreLoad(2, 1.6))[1])
    monkeypatch.delenv(FROM_MAKE)
    assert workers_to_start(2, CoreLoad(2, 4.0))[1].startswith("--workers 2: 1 started, not 2: 2 cores")  # type: ignore[union-attr]


def test_no_load_reading_starts_every_worker_asked() -> None:
    assert workers_to_start(3, None) == (3, None)


def test_a_worker_cut_leaves_the_first_every_thread_and_gpu_workers_are_not_cut() -> None:
    busy = CoreLoad(2, 6.0)
    fitted, notes = fit_workers(BenchConfig(workers=2), busy)
    assert fitted.workers == 1 and len(notes) == 1
    (worker,) = worker_configs(fitted)
    assert worker.threads is None  # the servers' default threads, not half of them
    per_card = BenchConfig(gpu_devices=["0", "1"])
    assert fit_workers(per_card, busy) == (per_card, [])
    assert fit_workers(BenchConfig(workers=2), CoreLoad(2, 0.1)) == (BenchConfig(workers=2), [])


def test_the_reading_is_this_hosts_cores_and_load() -> None:
    reading = CoreLoad.read()
    assert reading is not None and reading.cores >= 1 and reading.load >= 0
    assert reading.free() <= reading.cores


def bench_of_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reading: CoreLoad) -> Bench:
    monkeypatch.setattr(CoreLoad, "read", classmethod(lambda cls: reading))
    settings = {**SETTINGS, "servers": "embedded", "sandbox": "local", "workers": 2, "out": f"{tmp_path}/r.csv"}
    return Bench(BenchConfig(**settings), checkout=ROOT)  # type: ignore[arg-type]


@pytest.mark.processes  # the bench reads its commit with git
def test_a_bench_starts_the_second_worker_only_where_the_reading_frees_a_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = bench_of_two(tmp_path, monkeypatch, CoreLoad(2, 3.0))
    assert len(busy.factories) == 1 and busy.settings.workers == 1
    assert len(busy.start_notes) == 1 and "1 started, not 2" in busy.start_notes[0]
    idle = bench_of_two(tmp_path, monkeypatch, CoreLoad(2, 0.0))
    assert len(idle.factories) == 2 and idle.start_notes == []
