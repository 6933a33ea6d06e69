"""RESUME=1 without OUT= (bench.run.resume_file) continues the newest unfinished results file of the same matrix, and
the command printed on Ctrl-C (bench.run.spelling) is the one the user would type: make's variables under make."""

from __future__ import annotations

import csv
import logging
import os
import time
from pathlib import Path

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.results.schema import COLUMNS
from bench.run import resume_file
from bench.run.plan import matrix_cells, plan_runs
from bench.run.spelling import FROM_MAKE, continue_command, spelled

MAKE = {FROM_MAKE: "1"}


def config(**changes: object) -> BenchConfig:
    return BenchConfig(**({"use_jeff": False, "presets": ["part3", "late"], "reps": 2} | SETTINGS | changes))  # type: ignore[arg-type]


def write(path: Path, rows: list[dict[str, str]], age_s: float) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def rows_of(settings: BenchConfig, count: int, stop_reason: str = "done") -> list[dict[str, str]]:
    planned = [matrix_cells(run, settings) for run in plan_runs(settings, ROOT)][:count]
    return [{**cells, "run_id": f"r{i}-{id(cells)}", "stop_reason": stop_reason} for i, cells in enumerate(planned)]


def test_the_newest_unfinished_file_of_the_same_matrix_is_continued(tmp_path: Path) -> None:
    mine = config()
    planned = [matrix_cells(run, mine) for run in plan_runs(mine, ROOT)]
    unfinished = write(tmp_path / "20261206-100000-abc.csv", rows_of(mine, 2), age_s=300)
    write(tmp_path / "20261206-110000-abc.csv", rows_of(config(ctx=[8192]), 1), age_s=200)  # another matrix
    write(tmp_path / "20261206-120000-abc.csv", rows_of(mine, 4), age_s=100)  # finished
    write(tmp_path / "20261206-130000-abc.csv", rows_of(mine, 4, "infra_error"), age_s=50)  # nothing measured
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")  # not a results file
    assert resume_file.resumable(tmp_path, planned) == (tmp_path / "20261206-130000-abc.csv", 0)
    (tmp_path / "20261206-130000-abc.csv").unlink()
    assert resume_file.resumable(tmp_path, planned) == (unfinished, 2)
    assert resume_file.resumable(tmp_path / "none", planned) is None


def test_resume_without_out_says_which_file_it_continues_in_the_users_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    new = tmp_path / "20261206-140000-abc.csv"
    monkeypatch.setattr(resume_file, "default_out", lambda checkout: new)
    monkeypatch.setenv(FROM_MAKE, "1")
    assert resume_file.results_file(config(resume=True), ROOT) == new  # nothing to continue: a new file, said
    assert (
        f"RESUME=1 without OUT=: no unfinished results file of this matrix in {tmp_path}; starting {new}" in caplog.text
    )
    unfinished = write(tmp_path / "20261206-100000-abc.csv", rows_of(config(), 3), age_s=60)
    assert resume_file.results_file(config(resume=True), ROOT) == unfinished
    assert (
        f"RESUME=1 without OUT=: continuing {unfinished}, the newest unfinished file of this matrix (3 of 4 runs)"
        in caplog.text
    )
    assert resume_file.results_file(config(), ROOT) == new  # without RESUME: always a new file
    assert resume_file.results_file(config(resume=True, out=str(tmp_path / "x.csv")), ROOT) == tmp_path / "x.csv"


def test_the_command_that_continues_is_the_one_typed_with_resume() -> None:
    given = {"ctx": [4096], "presets": ["part3", "late"], "reps": 2}
    assert (
        continue_command(given, Path("results/a.csv"), MAKE) == "make bench CTX=4096 PRESETS=part3,late REPS=2 RESUME=1"
    )
    flags = {**MAKE, "FLINT_SERVER_ARGS": "-fa on"}
    assert (
        continue_command({"out": "b.csv"}, Path("b.csv"), flags)
        == "make bench 'FLINT_SERVER_ARGS=-fa on' OUT=b.csv RESUME=1"
    )
    assert continue_command(given, Path("results/a.csv"), {}) == (
        "bench run --ctx 4096 --presets part3,late --reps 2 --resume --out results/a.csv"
    )
    assert (spelled("out", MAKE), spelled("resume", MAKE), spelled("out", {})) == ("OUT=", "RESUME=1", "--out")
