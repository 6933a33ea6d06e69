"""A SIGTERM at any moment after the run's agent has stopped keeps the run or runs it again (bench/run/finishing.py,
bench/run/gradings.py): a real `python -m bench run` of todo_repo against a scripted Flint is timed once from the
agent's stop to its exit, then stopped at moments spread over that span, both as `kill` stops it (the bench alone)
and as `scancel` does (every process of the tree at once). Each stop leaves a graded row, an `infra_error` row or a
run marked interrupted, and `--resume` then leaves the run graded, once."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_flint_bench import fake_flint_argv
from process_tree import descendants

from bench.results.append import read_rows
from bench.run.spelling import FROM_MAKE
from bench.testing import fake_llama

pytestmark = pytest.mark.processes  # a bench, its agent and the grading's pytest as child processes
ROOT = Path(__file__).resolve().parents[3]
MOMENTS = (0.0, 0.3, 0.6, 0.9)  # fractions of the span from the agent's stop to the bench's exit


def bench_argv(tmp_path: Path, flint: fake_llama.FakeLlama) -> list[str]:
    settings = tmp_path / "bench.yaml"
    settings.write_text("use_jeff: false\nagent_retries: 0\n")
    more = ["--config", str(settings), "--max-steps", "2"]
    out = tmp_path / "results.csv"
    return [sys.executable, "-m", "bench", *fake_flint_argv(flint, out, *more, fixture="todo_repo", root=ROOT)]


def start(argv: list[str]) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items() if name != FROM_MAKE}  # bench run's own spelling
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_the_agents_stop(process: subprocess.Popen[str], runs: Path) -> float:
    """The moment the run's trace is kept in its folder: the agent has exited; grading and the row come after."""
    deadline = time.monotonic() + 120
    while not (runs.is_dir() and any(runs.glob("*/events.jsonl"))):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0][-3000:]
        time.sleep(0.01)
    return time.monotonic()


def span_after_the_agents_stop(tmp_path: Path) -> float:
    with fake_llama.FakeLlama(default=fake_llama.prose("Done.")) as flint:
        process = start(bench_argv(tmp_path, flint))
        stopped = wait_for_the_agents_stop(process, tmp_path / "runs")
        output = process.communicate(timeout=120)[0]
    assert process.returncode == 0, output[-3000:]
    return time.monotonic() - stopped


def stop_at(tmp_path: Path, fraction: float, span_s: float, every_process: bool) -> None:
    with fake_llama.FakeLlama(default=fake_llama.prose("Done.")) as flint:
        argv = bench_argv(tmp_path, flint)
        process = start(argv)
        stopped = wait_for_the_agents_stop(process, tmp_path / "runs")
        time.sleep(max(0.0, stopped + fraction * span_s - time.monotonic()))
        targets = [process.pid, *descendants(process.pid)] if every_process else [process.pid]
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):  # it ended on its own in the meantime
                os.kill(pid, signal.SIGTERM)
        output = process.communicate(timeout=120)[0]
        # -15: the stop reached the bench in its interpreter's own exit, when Python's handlers are gone (its rows
        # were written by then: the checks below hold it to that)
        assert process.returncode in (0, 143, -signal.SIGTERM), f"exit {process.returncode} at {fraction}: {output}"
        rows = read_rows(tmp_path / "results.csv") if (tmp_path / "results.csv").exists() else []
        graded = [row for row in rows if row["stop_reason"] == "done"]
        if graded:
            (row,) = rows
            assert row["hidden_total"] == "6", f"kept ungraded at {fraction}: {row['error']}"
            assert not list((tmp_path / "runs").glob("*.interrupted")), output[-3000:]
            return
        # not kept: the row says why, or the run's folder is marked, and --resume runs it again
        assert [row["stop_reason"] for row in rows] in ([], ["infra_error"]), f"at {fraction}: {rows}"
        assert rows or list((tmp_path / "runs").glob("*.interrupted")), f"at {fraction}: {output[-3000:]}"
        again = start([*argv, "--resume"])
        output = again.communicate(timeout=180)[0]
    assert again.returncode == 0, output[-3000:]
    rows = read_rows(tmp_path / "results.csv")
    assert rows[-1]["stop_reason"] == "done" and rows[-1]["hidden_total"] == "6", rows
    assert sum(row["stop_reason"] == "done" for row in rows) == 1, rows


@pytest.fixture(scope="module")
def span_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The span from the agent's stop to the bench's exit, timed once for both ways of stopping: it is the same
    bench, and timing it again was one more whole bench run."""
    return span_after_the_agents_stop(tmp_path_factory.mktemp("reference"))


# One pytest-xdist group, so that both ways of stopping run on the worker that timed the span.
@pytest.mark.xdist_group("sigterm-sweep")
@pytest.mark.parametrize("every_process", [False, True], ids=["kill", "scancel"])
def test_a_sigterm_at_any_moment_after_the_agents_stop_keeps_the_run_or_runs_it_again(
    tmp_path: Path, span_s: float, every_process: bool
) -> None:
    folders = {f"at-{fraction}": tmp_path / f"at-{fraction}" for fraction in MOMENTS}
    for folder in folders.values():
        folder.mkdir()
    for fraction in MOMENTS:
        stop_at(folders[f"at-{fraction}"], fraction, span_s, every_process)
