"""Benchmark: `bench compare`, `bench report` and `bench view` on 1,000 and 10,000 rows (ten configurations, each run
with a trace), every row as full as a real bench writes it: the shipped example's real row with the figures varied.

    python perf/analysis.py [--quick]

Each figure is the median of a few repeats, run in a child process so that its peak memory (ru_maxrss) is its own:
- compare of two 1,000-row files with gates: under 2 s and 200 MB, its wall time and its CPU time both (the CPU
  time is what a shared machine's load does not inflate: a miss there is the command's own);
- report of one 1,000-row file, with every trace read and every figure drawn: under 10 s;
- the largest figure the report drew, in pixels on its longer side: bounded whatever the group's size;
- at 10,000 rows (one repeat each): compare under 10 s (wall and CPU time), report and view under 500 MiB of peak
  memory.
`figures(quick)` gives them as `make perf` tables them; quick mode uses 100 rows and one repeat, no 10,000.
"""

from __future__ import annotations

import functools
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from bench.results.append import encode_line, read_rows
from bench.results.schema import COLUMNS

PRESETS = ["part2", "clearing", "part3", "part3+", "strict"]
CTXS = [4096, 8192]
TARGETS = {"compare, 1,000 rows": 2.0, "compare peak memory": 200.0, "report, 1,000 rows": 10.0}
TARGETS_10K = {"compare": 10.0, "report peak memory": 500.0, "view peak memory": 500.0}
EXAMPLE = Path(__file__).resolve().parents[1] / "results" / "example" / "cpu-presets.csv"
LARGEST_FIGURE_PX = 4000


def write_results(path: Path, runs_per_group: int, seed: int, slower: float = 1.0) -> None:
    """A results file of len(PRESETS) x len(CTXS) groups of `runs_per_group` runs, each with a short trace; written
    in one go with the bench's own record encoding (a bench's append syncs each row: 10,000 of them take minutes)."""
    rng = random.Random(seed)
    lines = [encode_line(COLUMNS)]
    for preset in PRESETS:
        for ctx in CTXS:
            for rep in range(1, runs_per_group + 1):
                row = _row(rng, preset, ctx, rep, slower)
                lines.append(encode_line([row.get(column, "") for column in COLUMNS]))
                _write_trace(path.parent / "runs" / row["run_id"] / "events.jsonl", rng, ctx)
    path.write_bytes(b"".join(lines))


@functools.cache
def _real_row() -> dict[str, str]:
    """A row as a real bench fills it (every column it measured): the shipped example's first, in today's columns."""
    return {column: cell for column, cell in read_rows(EXAMPLE)[0].items() if column in COLUMNS}


def _row(rng: random.Random, preset: str, ctx: int, rep: int, slower: float) -> dict[str, str]:
    done = rng.random() < 0.7
    wall = rng.lognormvariate(math.log(200 * slower), 0.15)
    return _real_row() | {
        "run_id": f"20261101T0000{rep:04d}-todo_repo-{preset}-{ctx}-r{rep}-{rng.getrandbits(16):04x}",
        "started_at": "2026-11-01T00:00:00+00:00",
        "git_sha": "0" * 40,
        "fixture": "todo_repo",
        "preset": preset,
        "ctx": str(ctx),
        "rep": str(rep),
        "sandbox": "docker",
        "servers": "compose",
        "flint_model": "flint.gguf",
        "jeff_model": "jeff.gguf",
        "server_build": "b11434",
        "stop_reason": "done" if done else "step_limit",
        "hidden_total": "6",
        "hidden_passed": "6" if done else str(rng.randint(1, 5)),
        "wall_s": f"{wall:.2f}",
        "model_s": f"{wall * 0.8:.2f}",
        "prompt_tokens_reprocessed": str(round(rng.lognormvariate(math.log(20_000), 0.1))),
        "reprocessed_check": "ok",
        "peak_gpu_mib_flint": str(13_000 + rng.randint(-4, 4)),
        "gpu_mem_method": "nvml_device_v2+process_v3",
        "steps": "20",
    }


def _write_trace(path: Path, rng: random.Random, ctx: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    events = [{"t": 0.0, "event": "start", "n_ctx": ctx}]
    prompt = 900
    for step in range(1, 21):
        prompt = min(ctx - 200, prompt + rng.randint(50, 400))
        usage = {"prompt_tokens": prompt, "completion_tokens": 60}
        timings = {"prompt_n": rng.randint(40, prompt), "cache_n": 0, "prompt_ms": 100.0, "predicted_ms": 900.0}
        events.append({"t": float(step), "event": "response", "step": step, "usage": usage, "timings": timings})
        if prompt > ctx * 0.5 and rng.random() < 0.3:
            events.append({"t": step + 0.5, "event": "clear", "step": step, "reason": "threshold", "changed": 3})
            prompt //= 3
    events.append({"t": 21.0, "event": "stop", "reason": "done", "steps": 20})
    path.write_text("".join(json.dumps(event) + "\n" for event in events))


def _measure(command: list[str], repeats: int) -> tuple[list[float], float, list[float]]:
    """Wall seconds of each repeat, the peak MiB, and CPU seconds of each repeat (on a shared machine the wall
    time also holds the time spent waiting for a core; the CPU time does not)."""
    times, peaks, cpu = [], [], []
    for _ in range(repeats):
        # ru_maxrss of the children is the largest of any child so far: a fresh interpreter per figure keeps it apart
        # (exit 1 is a tripped gate: the command did its work)
        probe = [
            "-c",
            "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], "
            "stdout=subprocess.DEVNULL); assert done.returncode in (0, 1), done; "
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss)",
            sys.executable,
            *command,
        ]
        start = time.perf_counter()
        out = subprocess.run([sys.executable, *probe], check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - start)
        seconds, peak = out.split()[-2:]
        cpu.append(float(seconds))
        peaks.append(int(peak) / 1024)
    return times, max(peaks), cpu


def _figure(name: str, unit: str, values: list[float], target: float | None, higher: bool = False) -> dict:
    median = statistics.median(values)
    passed = None if target is None else (median >= target if higher else median <= target)
    sign = ">=" if higher else "<="
    return {
        "figure": name,
        "unit": unit,
        "median": round(median, 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "repeats": len(values),
        "target": None if target is None else f"{sign} {target:g}",
        "passed": passed,
    }


def _png_side(png: Path) -> int:
    with Image.open(png) as image:  # closed: an open file warns under pytest's warnings-as-errors
        return max(image.size)


def figures(quick: bool) -> list[dict]:
    return measure(10, 1) if quick else measure(100, 3) + measure_10k()


def measure_10k() -> list[dict]:
    """compare, report and view of 10,000 rows, once each: their time and peak memory."""
    with tempfile.TemporaryDirectory(prefix="perf-analysis-10k-") as tmp:
        old, new = Path(tmp) / "old" / "results.csv", Path(tmp) / "new" / "results.csv"
        for path, seed, slower in ((old, 1, 1.0), (new, 2, 1.1)):
            path.parent.mkdir()
            write_results(path, 1000, seed=seed, slower=slower)
        compare_times, compare_peak, compare_cpu = _measure(["-m", "bench", "-q", "compare", str(old), str(new)], 1)
        report = ["-m", "bench", "-q", "report", str(new), "--out-dir", str(Path(tmp) / "report")]
        report_times, report_peak, _ = _measure(report, 1)
        view_times, view_peak, _ = _measure(["-m", "bench", "-q", "view", str(new), "--out", f"{tmp}/view.html"], 1)
        page_mib = Path(tmp, "view.html").stat().st_size / 2**20
    return [
        _figure("compare, 10,000 rows", "s", compare_times, TARGETS_10K["compare"]),
        _figure("compare, 10,000 rows, CPU time", "s", compare_cpu, TARGETS_10K["compare"]),
        _figure("compare peak memory, 10,000 rows", "MiB", [compare_peak], None),
        _figure("report, 10,000 rows", "s", report_times, None),
        _figure("report peak memory, 10,000 rows", "MiB", [report_peak], TARGETS_10K["report peak memory"]),
        _figure("view, 10,000 rows", "s", view_times, None),
        _figure("view peak memory, 10,000 rows", "MiB", [view_peak], TARGETS_10K["view peak memory"]),
        _figure("view page, 10,000 rows", "MiB", [page_mib], None),
    ]


def measure(runs: int, repeats: int) -> list[dict]:
    """The figures for groups of `runs` runs, each timed `repeats` times."""
    rows = runs * len(PRESETS) * len(CTXS)
    with tempfile.TemporaryDirectory(prefix="perf-analysis-") as tmp:
        old, new = Path(tmp) / "old" / "results.csv", Path(tmp) / "new" / "results.csv"
        old.parent.mkdir()
        new.parent.mkdir()
        write_results(old, runs, seed=1)
        write_results(new, runs, seed=2, slower=1.1)
        gates = ["--fail-on", "wall_s:25", "--fail-on", "completed", "--fail-on", "infra"]
        compare = ["-m", "bench", "-q", "compare", str(old), str(new), *gates]
        compare_times, compare_peak, compare_cpu = _measure(compare, repeats)
        report_dir = Path(tmp) / "report"
        report = ["-m", "bench", "-q", "report", str(new), "--out-dir", str(report_dir)]
        report_times, _, report_cpu = _measure(report, repeats)
        largest = max(_png_side(png) for png in report_dir.glob("*.png"))
    scale = f", {rows:,} rows"
    return [
        _figure(f"compare{scale}", "s", compare_times, TARGETS["compare, 1,000 rows"]),
        _figure(f"compare{scale}, CPU time", "s", compare_cpu, TARGETS["compare, 1,000 rows"]),
        _figure("compare peak memory", "MiB", [compare_peak], TARGETS["compare peak memory"]),
        _figure(f"report{scale}", "s", report_times, TARGETS["report, 1,000 rows"]),
        _figure(f"report{scale}, CPU time", "s", report_cpu, None),
        _figure("largest report figure", "px", [float(largest)], LARGEST_FIGURE_PX),
    ]


def main() -> int:
    results = figures(quick="--quick" in sys.argv)
    for figure in results:
        verdict = {True: "ok", False: "MISSED", None: ""}[figure["passed"]]
        target = figure["target"] or ""
        print(f"{figure['figure']:<32} {figure['median']:>10.3f} {figure['unit']:<4} {target:<10} {verdict}")
    return 0 if all(f["passed"] is not False for f in results) else 1


if __name__ == "__main__":
    sys.exit(main())
