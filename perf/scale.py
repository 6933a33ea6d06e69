"""Benchmark: what a second worker buys (bench/run/workers.py), and what the bench costs per run apart from the model.

    python perf/scale.py [--quick] [--real]

One matrix, run with 1 worker and then with 2, each worker a pair of scripted llama-servers (bench/testing/
fake_llama.py) that take a fixed service time per request, the real agent in local sandboxes, the real grading:
- the speed-up of 2 workers over 1 (target >= 1.8: the workers share nothing but the queue and the writer);
- the bench's own cost per run: a run's wall time with 1 worker less the time its requests were served.
With --real (a GPU host), the same matrix on the real servers: one worker per GPU (`gpu_devices: all`), else two
CPU pairs. `figures(quick)` gives them as `make perf` tables them; quick mode runs the smallest matrix once, on
the suite's small task (perf/figures.py perf_task).
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.config import BenchConfig, Choice
from bench.run.choices import Factory, Host
from bench.run.runner import Bench
from bench.servers.base import Endpoints
from bench.testing import fake_llama
from bench.testing.fakes import NO_GPU, FakeServers, _props, given_kind
from perf.figures import TASK, PerfTask, perf_task

SPEEDUP_TARGET = ">= 1.8"


class TimedServers(FakeServers):
    """A scripted Flint whose every answer takes `service_s` (a tool call, so the agent goes on to its step limit)."""

    def __init__(self, service_s: float, read: str = TASK.read) -> None:
        super().__init__()
        self.service_s, self.read = service_s, read

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        self.stop()
        self.starts.append(ctx)
        answer = fake_llama.tool_call("read_file", {"path": self.read}) | {"compute_s": self.service_s}
        self.flint = fake_llama.FakeLlama(n_ctx=ctx, default=answer).start()
        self.dead = False
        return Endpoints(ctx=ctx, flint_url=self.flint.url, flint=_props(self.flint), flint_model_path=None)


class ScriptedFactory(Factory):
    """Local sandboxes (the real agent) and a pair of timed scripted servers per worker."""

    def __init__(self, config: BenchConfig, service_s: float, task: PerfTask) -> None:
        self.timed = TimedServers(service_s, task.read)
        local, scripted = Choice("local", "perf/scale.py"), Choice("scripted", "perf/scale.py")
        super().__init__(
            config, local, scripted, Host(None, NO_GPU), server_kind=given_kind("scripted", self.timed), checkout=ROOT
        )


def matrix(out: Path, workers: int, reps: int, steps: int, real: bool, task: PerfTask) -> BenchConfig:
    settings: dict[str, Any] = {
        **task.settings,
        "presets": ["part3"],
        "ctx": [4096],
        "reps": reps,
        "max_steps": steps,
        "use_jeff": False,
        "out": str(out),
        "sandbox": "local",
        "agent_retries": 1,
    }
    if real:
        from bench.measure.nvml import nvidia_gpu_present

        settings |= {"servers": "auto", "jeff_ctx": 512}
        settings |= {"gpu_devices": "all"} if workers > 1 and nvidia_gpu_present() else {"workers": workers}
    else:
        settings |= {"servers": "external", "flint_url": "http://127.0.0.1:1", "workers": 1}
    return BenchConfig(**settings)


def one_bench(
    workers: int, reps: int, steps: int, service_s: float, real: bool, quick: bool = False
) -> tuple[float, list[dict[str, str]]]:
    """Wall time of the matrix on `workers` workers, and its rows."""
    with tempfile.TemporaryDirectory(prefix="perf-scale-") as tmp:
        task = perf_task(quick)
        config = matrix(Path(tmp) / "results.csv", workers, reps, steps, real, task)
        if real:
            bench = Bench(config, checkout=ROOT)
        else:
            # external settings only to build the factories; each worker gets its own timed scripted pair
            factories = [ScriptedFactory(config, service_s, task) for _ in range(workers)]
            bench = Bench(config, factories=factories, checkout=ROOT)
        start = time.perf_counter()
        rows = bench.run()
        return time.perf_counter() - start, rows


def figure(name: str, unit: str, samples: list[float], target: str | None, quick: bool) -> dict[str, Any]:
    median = statistics.median(samples)
    passed = None
    if target is not None and not quick:
        sign, _, bound = target.partition(" ")
        passed = median >= float(bound) if sign == ">=" else median <= float(bound)
    return {
        "figure": name,
        "unit": unit,
        "median": median,
        "min": min(samples),
        "max": max(samples),
        "repeats": len(samples),
        "target": target,
        "passed": passed,
    }


def figures(quick: bool, real: bool = False) -> list[dict[str, Any]]:
    reps, steps, service_s, repeats = (2, 1, 0.2, 1) if quick else (6, 3, 2.0, 2)
    speedups, costs, per_run = [], [], []
    if not quick:  # the first bench of a process pays for imports and cold caches: not a worker's cost
        one_bench(1, 1, 1, 0.0, real)
    for _ in range(repeats):
        one, rows = one_bench(1, reps, steps, service_s, real, quick)
        two, rows_two = one_bench(2, reps, steps, service_s, real, quick)
        for found in (rows, rows_two):
            bad = [row["error"] for row in found if row["stop_reason"] == "infra_error"]
            if bad or len(found) != reps:
                raise RuntimeError(f"the matrix did not run cleanly: {len(found)} rows of {reps}, {bad[:1]}")
        speedups.append(one / two)
        served = sum(float(row["model_s"] or 0) for row in rows) if real else reps * steps * service_s
        costs.append((one - served) / reps)
        per_run.append(one / reps)
    where = "real servers" if real else f"scripted server, {service_s:g} s per request"
    where += f", {os.cpu_count()} cores"  # the bench's own cost (grading, the work copy) is CPU: it shares them
    return [
        figure(f"speed-up of 2 workers over 1 ({reps} runs, {where})", "x", speedups, SPEEDUP_TARGET, quick),
        figure(f"bench's own cost per run, 1 worker ({where})", "s", costs, None, quick),
        figure(f"wall time per run, 1 worker ({where})", "s", per_run, None, quick),
    ]


def main(argv: list[str]) -> int:
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    logging.getLogger().addHandler(handler)
    found = figures(quick="--quick" in argv, real="--real" in argv)
    for one in found:
        print(json.dumps(one))
    return 1 if any(one["passed"] is False for one in found) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
