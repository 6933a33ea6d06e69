"""A real SIGTERM to a `python -m bench run` process (bench/run/finishing.py): one that lands after the run's agent
has ended, while the run is graded and its row written, waits for the row, then the bench exits 143 with the run
kept; one that lands while the agent runs cuts the run short at once, as before (no row, its folder marked)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_flint_bench import fake_flint_argv

from bench.results.append import read_rows
from bench.run.spelling import FROM_MAKE
from bench.testing import fake_llama

pytestmark = pytest.mark.processes  # a bench, its agent and the grading's pytest as child processes
ROOT = Path(__file__).resolve().parents[3]


def bench(tmp_path: Path, flint: fake_llama.FakeLlama) -> subprocess.Popen[str]:
    settings = tmp_path / "bench.yaml"
    settings.write_text("use_jeff: false\nagent_retries: 0\n")
    more = ["--config", str(settings), "--max-steps", "2"]
    argv = [
        sys.executable,
        "-m",
        "bench",
        *fake_flint_argv(flint, tmp_path / "results.csv", *more, fixture="todo_repo", root=ROOT),
    ]
    env = {name: value for name, value in os.environ.items() if name != FROM_MAKE}  # bench run's own spelling
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def terminate_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], timeout_s: float = 120, stop: int = signal.SIGTERM
) -> str:
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0][-3000:]
        time.sleep(0.02)
    process.send_signal(stop)
    output, _ = process.communicate(timeout=120)
    return output


def test_a_sigterm_after_the_agent_ended_lets_the_row_be_written_then_exits_143(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([fake_llama.prose("Done.")]) as flint:
        process = bench(tmp_path, flint)
        runs = tmp_path / "runs"
        # the run's trace is kept in its folder once the agent has exited; grading and the row come after
        output = terminate_when(process, lambda: runs.is_dir() and any(runs.glob("*/events.jsonl")))
    assert process.returncode == 143, output[-3000:]
    (row,) = read_rows(tmp_path / "results.csv")
    assert row["stop_reason"] == "done" and row["hidden_total"] == "6", row  # graded, and kept
    assert (runs / row["run_id"]).is_dir() and not list(runs.glob("*.interrupted"))
    assert "once the row of the run that had ended was written" in output


def test_a_ctrl_c_during_grading_waits_for_the_row_and_says_how_to_continue(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([fake_llama.prose("Done.")]) as flint:
        process = bench(tmp_path, flint)
        runs = tmp_path / "runs"
        ready = lambda: runs.is_dir() and any(runs.glob("*/events.jsonl"))  # noqa: E731 - the agent has exited
        output = terminate_when(process, ready, stop=signal.SIGINT)
    assert process.returncode == 130, output[-3000:]
    (row,) = read_rows(tmp_path / "results.csv")
    assert row["stop_reason"] == "done" and row["hidden_total"] == "6", row  # graded, and kept
    assert "Ctrl-C: the run had ended; the bench stops once its row is written" in output
    out = tmp_path / "results.csv"
    assert (
        f"interrupted; rows already written are kept; to continue: bench run --config {tmp_path / 'bench.yaml'}"
        in output
    )
    assert f" --out {out} " in output and " --max-steps 2 " in output and " --resume\n" in output


def test_a_sigterm_while_the_agent_runs_cuts_the_run_short_at_once(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([{**fake_llama.prose("Done."), "delay": 30.0}]) as flint:
        process = bench(tmp_path, flint)
        started = time.monotonic()
        output = terminate_when(process, lambda: bool(flint.requests))  # the agent waits for its first answer
    assert process.returncode == 143, output[-3000:]
    assert time.monotonic() - started < 25  # not after the answer's 30 s
    assert not (tmp_path / "results.csv").exists() or read_rows(tmp_path / "results.csv") == []
    assert len(list((tmp_path / "runs").glob("*.interrupted"))) == 1
