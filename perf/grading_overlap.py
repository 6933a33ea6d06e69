"""What grading beside the next run saves (bench/run/gradings.py): one scripted matrix run in turns with
`grading_overlap` off and on (A B A B), its whole time against the agents' own (the rows' wall_s).

Per run: the bench's own seconds (the matrix's time less its runs' wall_s, divided by the runs), serial and overlapped;
and the time saved against the grading time of all runs but the last (the most overlap can hide: each agent's run is
longer than a grading here), target >= 0.8. Full mode: todo_repo, six runs of three scripted steps, 3 s of server
work each, in the local sandbox and grader (the docker grader under load takes longer than such a run); quick mode:
the suite's small task, two runs of one step.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.config import BenchConfig
from bench.run import runner
from bench.testing import fake_llama
from perf.figures import Figure, figure, perf_task


def matrix(
    tmp: Path, settings: dict[str, Any], shape: tuple[int, int, float], overlap: bool
) -> tuple[float, float, float]:
    """(the matrix's seconds, its runs' wall_s summed, the gradings' seconds summed) for one bench of `shape`: runs,
    steps a run, each scripted answer's compute time in seconds."""
    runs, steps, compute_s = shape
    task = perf_task(settings["fixtures"] != ["todo_repo"])
    step = {**fake_llama.tool_call("read_file", {"path": task.read}), "compute_s": compute_s}
    gradings: list[float] = []
    grade = runner.grade_finished
    runner.grade_finished = timed_into(gradings, grade)
    try:
        with fake_llama.FakeLlama([step] * (steps * runs), n_ctx=4096) as flint:
            out = tmp / f"{'overlap' if overlap else 'serial'}-{time.monotonic_ns()}.csv"
            config = BenchConfig(
                **settings,
                servers="external",
                flint_url=flint.url,
                use_jeff=False,
                ctx=[4096],
                presets=["part3"],
                max_steps=steps,
                reps=runs,
                out=str(out),
                grading_overlap=overlap,
            )
            start = time.perf_counter()
            rows = runner.Bench(config, checkout=ROOT).run()
            spent = time.perf_counter() - start
    finally:
        runner.grade_finished = grade
    return spent, sum(float(row["wall_s"]) for row in rows), sum(gradings)


def timed_into(samples: list[float], call: Callable[..., Any]) -> Callable[..., Any]:
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            samples.append(time.perf_counter() - start)

    return timed_call


def figures(quick: bool) -> list[Figure]:
    turns, shape = (1, (2, 1, 0.1)) if quick else (2, (6, 3, 3.0))  # (runs, steps a run, seconds a step)
    runs = shape[0]
    settings: dict[str, Any] = {**perf_task(quick).settings, "sandbox": "local"}
    own: dict[bool, list[float]] = {False: [], True: []}
    saved: list[float] = []
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        for _ in range(turns):  # A B A B: the machine's load shared by both
            serial = matrix(Path(tmp), settings, shape, overlap=False)
            overlapped = matrix(Path(tmp), settings, shape, overlap=True)
            for overlap, (spent, walls, _) in ((False, serial), (True, overlapped)):
                own[overlap].append((spent - walls) / runs)
            hideable = serial[2] * (runs - 1) / runs  # the gradings of every run but the last
            saved.append((serial[0] - overlapped[0]) / hideable)
    return [
        figure("bench's own time per run, grading serial", "s", own[False], None, quick),
        figure("bench's own time per run, grading beside the next run", "s", own[True], None, quick),
        figure("time saved / grading time of all runs but the last", "x", saved, ">= 0.8", quick),
    ]
