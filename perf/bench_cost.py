"""The bench's own cost per run, as a share of the run's wall time (figure for perf/run.py; target at most 2%).

Per run, the time the bench spends around the agent: the work copy, emptying the caches, the /metrics reads, the
GPU sampler starting and stopping, keeping the trace and the diff, splitting the reprocessed tokens with Flint's
tokenizer, making and appending the row. Grading is left out (its own figure, perf/scoring.py), and so is what a
bench does once (starting the servers, measuring their speeds). Measured on a real CPU run: the embedded
llama-server with the small model, forced to call tools, in a local sandbox; quick mode uses the scripted server
and the suite's small task (perf/figures.py perf_task).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench.run.one_run as one_run
import bench.run.runner as runner
from bench import ROOT
from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.binaries import find_llama_server, find_small_model
from bench.run.record import RunRecord
from bench.testing import fake_llama
from perf.figures import Figure, Unavailable, figure, perf_task


class TimedBench(runner.Bench):
    """A bench that times each run's measuring and recording, and the grading inside it."""

    def __init__(self, config: BenchConfig) -> None:
        super().__init__(config, checkout=ROOT)
        self.spent: list[float] = []  # per run: measuring and recording, grading included
        self.grading: list[float] = []

    def _record(self, record: RunRecord, progress: Any) -> None:
        start = time.perf_counter()
        super()._record(record, progress)
        if self.spent:
            self.spent[-1] += time.perf_counter() - start


def timed_run(bench: TimedBench, run: Callable[..., RunRecord]) -> Callable[..., RunRecord]:
    """bench.run.one_run.run_one, timed: one run's measuring (its grading and recording are added after)."""

    def run_timed(*args: Any, **kwargs: Any) -> RunRecord:
        start = time.perf_counter()
        record = run(*args, **kwargs)
        bench.spent.append(time.perf_counter() - start)
        return record

    return run_timed


def timed_grading(bench: TimedBench, grade: Callable[..., Any]) -> Callable[..., Any]:
    def grade_timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return grade(*args, **kwargs)
        finally:
            bench.grading.append(time.perf_counter() - start)

    return grade_timed


def shares(config: BenchConfig) -> list[float]:
    """Per run: the bench's own time / the run's wall time, in percent."""
    bench = TimedBench(config)
    original, original_run = one_run.grade_run, runner.run_one
    one_run.grade_run = timed_grading(bench, original)
    runner.run_one = timed_run(bench, original_run)
    try:
        rows = bench.run()
    finally:
        one_run.grade_run = original
        runner.run_one = original_run
    out = []
    for row, spent, grading in zip(rows, bench.spent, bench.grading, strict=True):
        wall = float(row["wall_s"])
        out.append(100 * (spent - wall - grading) / wall)
    return out


def figures(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        task = perf_task(quick)
        out = str(Path(tmp) / "r.csv")
        # each run graded before the next (grading_overlap off), so that its grading can be taken out of its time
        settings: dict[str, Any] = {**task.settings, "presets": ["part3"], "sandbox": "local", "out": out}
        settings["grading_overlap"] = False
        if quick:
            replies = [fake_llama.tool_call("read_file", {"path": task.read})] * 2
            with fake_llama.FakeLlama(replies, n_ctx=4096) as flint:
                config = BenchConfig(
                    **settings, servers="external", flint_url=flint.url, use_jeff=False, ctx=[4096], max_steps=2, reps=1
                )
                samples = shares(config)
        else:
            try:
                find_llama_server(), find_small_model()
            except PrerequisiteError as e:
                raise Unavailable(str(e)) from e
            config = BenchConfig(**settings, servers="embedded", ctx=[1024], max_steps=4, reps=3, jeff_ctx=1024)
            samples = shares(config)
    return [figure("bench's own cost per run, share of wall", "%", samples, "<= 2.0", quick)]
