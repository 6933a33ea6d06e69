"""The runner with grading beside the next run (bench/run/gradings.py), end to end on the scripted Flint and local
sandboxes: the next run starts while the last one is graded, rows come in plan order and graded; without overlap each
run is graded before the next starts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fake_flint_bench import fake_flint_config
from small_task import SETTINGS, UNTOUCHED

from bench import ROOT
from bench.results.append import read_rows
from bench.run import runner
from bench.run.runner import Bench
from bench.testing import fake_llama

pytestmark = pytest.mark.usefixtures("child_processes")


def bench_output(tmp_path: Path, capsys: pytest.CaptureFixture[str], overlap: bool) -> tuple[list[str], list[dict]]:
    with fake_llama.FakeLlama([fake_llama.prose("Done.")] * 2) as flint:
        config = fake_flint_config(tmp_path, flint, **(SETTINGS | {"reps": 2, "grading_overlap": overlap}))
        rows = Bench(config, checkout=ROOT).run()
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    return lines, rows


def slower_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each grading a second longer than the run that follows it would take to start."""
    grade = runner.grade_finished

    def slow(*args: object, **kwargs: object) -> None:
        time.sleep(1.0)
        grade(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "grade_finished", slow)


def run_2_started_and_run_1_graded(lines: list[str]) -> tuple[int, int]:
    """The progress lines' indices: run 2's start, and run 1's end with its hidden score."""
    started_2 = next(i for i, line in enumerate(lines) if line.startswith("run 2/2") and line.endswith("starting"))
    ended_1 = next(i for i, line in enumerate(lines) if line.startswith("run 1/2") and ", hidden " in line)
    return started_2, ended_1


def test_the_next_run_starts_while_the_last_is_graded_and_rows_come_in_plan_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slower_grading(monkeypatch)
    lines, rows = bench_output(tmp_path, capsys, overlap=True)
    started_2, ended_1 = run_2_started_and_run_1_graded(lines)
    assert started_2 < ended_1, lines
    assert [row["rep"] for row in rows] == ["1", "2"]
    assert [row["rep"] for row in read_rows(tmp_path / "results.csv")] == ["1", "2"]
    for row in rows:  # graded, each its own run
        assert (row["stop_reason"], row["hidden_passed"], row["hidden_total"]) == ("done", *UNTOUCHED[:2]), row
    assert any(line.startswith("run 2/2") and ", hidden 1/3" in line for line in lines), lines  # named as it ran


def test_without_overlap_each_run_is_graded_before_the_next_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slower_grading(monkeypatch)
    lines, rows = bench_output(tmp_path, capsys, overlap=False)
    started_2, ended_1 = run_2_started_and_run_1_graded(lines)
    assert ended_1 < started_2, lines
    assert [row["hidden_total"] for row in rows] == [UNTOUCHED[1]] * 2
