"""A grading the infrastructure cut short is the run's infra_error, never the agent's failure (bench/run/grade.py):
a full temporary folder (a real tmpfs this test mounts as root) and a SIGTERM that reaches every process of the bench
as scancel sends it; `--resume` then runs those runs again and grades them. A grading pytest that dies on its own
(what the code under test can do) still counts the tests it did not report as failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from fake_flint_bench import fake_flint_argv
from process_tree import descendants, grading_pytest_runs
from small_task import UNTOUCHED, slow_fixtures
from tmpfs import fill

from bench import cli
from bench.results.append import read_rows
from bench.results.disk import temp_full
from bench.run.spelling import FROM_MAKE
from bench.score.graders import LocalGrader, Session
from bench.testing import fake_llama

CHECKOUT = Path(__file__).resolve().parents[3]


@pytest.fixture
def small_temp(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 4 MiB tmpfs made the temporary folder of this process and its children."""
    monkeypatch.setattr(tempfile, "tempdir", str(small_disk))
    monkeypatch.setenv("TMPDIR", str(small_disk))
    return small_disk


def run_argv(out: Path, flint: fake_llama.FakeLlama, *more: str) -> list[str]:
    return fake_flint_argv(flint, out, "--max-steps", "2", *more)


def grading(runs: list[Session]) -> bool:
    """The sessions of a run's grading, not the preflight's collection of the hidden tests (bench/run/preflight.py),
    whose verdict the process keeps: a collection broken here would refuse calc to every later test of the worker."""
    return not any("--collect-only" in run.args for run in runs)


def test_a_full_temporary_folder_while_grading_makes_infra_error_rows_that_resume_runs_again(
    small_temp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results.csv"  # the results on another disk, which has room
    sessions = LocalGrader.run_sessions

    def temp_full_when_grading(self: LocalGrader, workdir: Path, runs: list[Session], *args: Any) -> Any:
        if grading(runs):
            fill(small_temp)  # the grading copy is made; its pytest sessions find no room
        return sessions(self, workdir, runs, *args)

    monkeypatch.setattr(LocalGrader, "run_sessions", temp_full_when_grading)
    # each run graded before the next starts: beside a grading that filled it, the next run's work copy finds the
    # folder full too (an infra_error of its own, naming git's write)
    monkeypatch.setenv("AGENTBENCH_GRADING_OVERLAP", "false")
    with fake_llama.FakeLlama() as flint:
        status = cli.main(run_argv(out, flint, "--reps", "2"))
    assert status == cli.EXIT_FAILED == 1
    rows = read_rows(out)
    assert [row["stop_reason"] for row in rows] == ["infra_error", "infra_error"], rows
    for row in rows:
        assert f"the temporary folder {small_temp}/" in row["error"], row["error"]
        assert "takes no more writes (No space left on device)" in row["error"], row["error"]
        assert row["hidden_passed"] == row["hidden_total"] == "", row  # not measured, not 0 of 3
    monkeypatch.setattr(LocalGrader, "run_sessions", sessions)
    (small_temp / "filler").unlink()
    with fake_llama.FakeLlama() as flint:
        assert cli.main(run_argv(out, flint, "--reps", "2", "--resume")) == 0
    again = read_rows(out)[2:]
    assert [(row["rep"], row["stop_reason"]) for row in again] == [("1", "done"), ("2", "done")]
    assert [(row["hidden_passed"], row["hidden_total"]) for row in again] == [UNTOUCHED[:2]] * 2


def test_the_probe_tells_a_full_folder_from_one_with_room(small_temp: Path) -> None:
    assert temp_full(small_temp) is None
    fill(small_temp)
    assert temp_full(small_temp) == f"the temporary folder {small_temp} takes no more writes (No space left on device)"


def test_a_grading_pytest_that_dies_on_its_own_still_counts_its_tests_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_processes: None
) -> None:
    """The code under test killing its pytest is the agent's doing: the run stays graded, 0 passed, flagged."""
    out = tmp_path / "results.csv"
    sessions = LocalGrader.run_sessions

    def killed(self: LocalGrader, workdir: Path, runs: list[Session], *args: Any) -> Any:
        if grading(runs):
            (workdir / "calc.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
        return sessions(self, workdir, runs, *args)

    monkeypatch.setattr(LocalGrader, "run_sessions", killed)
    with fake_llama.FakeLlama() as flint:
        cli.main(run_argv(out, flint))
    (row,) = read_rows(out)
    assert row["stop_reason"] == "done" and row["hidden_passed"] == "0", row  # graded: the agent's doing
    assert "grading_tampered" in row["failure_labels"] and "pytest was killed by signal 9" in row["error"], row


@pytest.mark.processes
def test_a_sigterm_to_every_process_while_grading_makes_the_row_infra_error_and_resume_grades_it(
    tmp_path: Path,
) -> None:
    root, flag = slow_fixtures(tmp_path)
    out = tmp_path / "results.csv"
    env = {name: value for name, value in os.environ.items() if name != FROM_MAKE}
    with fake_llama.FakeLlama() as flint:
        argv = [sys.executable, "-m", "bench", *run_argv(out, flint), "--fixtures-root", str(root)]
        bench = subprocess.Popen(argv, cwd=CHECKOUT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        runs = tmp_path / "runs"  # the run's trace kept: the grading's supervisor now is the run's, not the preflight's
        while not (any(runs.glob("*/events.jsonl")) and grading_pytest_runs(bench.pid)):
            assert bench.poll() is None and time.monotonic() < deadline, bench.communicate()[0][-3000:]
            time.sleep(0.05)
        for pid in [bench.pid, *descendants(bench.pid)]:  # scancel: every process of the job at once
            os.kill(pid, signal.SIGTERM)
        output = bench.communicate(timeout=120)[0].decode(errors="replace")
        assert bench.returncode == 143, output[-3000:]
        rows = read_rows(out)
        assert len(rows) == 1, output[-3000:]
        row = rows[0]
        assert row["stop_reason"] == "infra_error" and row["hidden_passed"] == "", row
        assert row["error"].startswith("grading was cut short: the bench was asked to stop while it ran"), row
        flag.unlink()
        again = subprocess.run([*argv, "--resume"], cwd=CHECKOUT, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    first, second = read_rows(out)
    assert second["stop_reason"] == "done" and second["hidden_passed"] == UNTOUCHED[0], second
