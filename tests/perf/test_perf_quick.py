"""`make perf` in quick mode, inside `make test`: every perf module imports and runs (one repeat, small inputs), and
the table, the CSV and the exit status come out as `make perf` makes them. The figures are not judged here."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from perf import run
from perf.figures import figure, meets, not_measured

pytestmark = pytest.mark.slow
KEYS = {"figure", "unit", "median", "min", "max", "repeats", "target", "passed"}


def test_the_perf_modules_are_the_ones_make_perf_must_show() -> None:
    assert {"harness", "gpu_sampler", "scoring", "bench_cost", "replay_speed", "sandbox"} <= set(run.perf_modules())


@pytest.mark.parametrize("module", run.perf_modules())  # one test each: pytest-xdist spreads them over the workers
def test_every_perf_module_runs_and_the_table_is_written(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "perf.csv"
    assert run.main(["--quick", "--only", module, "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    with out.open() as f:
        rows = list(csv.DictReader(f))
    under_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    assert rows or (not under_ci and "not measured here" in printed), printed  # under CI nothing is unmeasured
    for row in rows:
        assert row["module"] == module
        assert (
            set(row) >= KEYS and row["passed"] == "" and float(row["min"]) <= float(row["median"]) <= float(row["max"])
        )
        assert row["figure"] in printed


def test_a_missed_target_fails_make_perf_with_its_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def collect(quick: bool, only: list[str] | None = None) -> tuple[list[dict], list[str], list[str]]:
        missed = {**figure("lifecycle / floor", "x", [3.1, 3.4, 3.3], "<= 2.0"), "module": "sandbox"}
        return [missed], [], ["sandbox: no Docker engine"]

    monkeypatch.setattr(run, "collect", collect)
    assert run.main(["--out", str(tmp_path / "p.csv")]) == 1
    captured = capsys.readouterr()
    assert "MISSED: lifecycle / floor = 3.3 x (target <= 2.0)" in captured.err
    assert "not measured here: sandbox: no Docker engine" in captured.out
    assert meets(0.9, "<= 1.0") and not meets(1.1, "<= 1.0") and meets(2.0, ">= 1.8") and meets(5, None) is None


def test_a_figure_not_measured_here_fails_a_full_run_and_is_listed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One figure of a module that cannot be measured (the docker grader's, with no engine) is named with its reason,
    the module's other figures still stand, and a full run fails: a target must not vanish unseen."""

    def figures(quick: bool) -> list[dict]:
        return [figure("local thing", "s", [1.0], "<= 5.0", quick), not_measured("docker thing", "no Docker engine")]

    monkeypatch.setattr(run, "perf_modules", lambda: ["scoring"])
    monkeypatch.setattr("perf.scoring.figures", figures)
    assert run.main(["--out", str(tmp_path / "full.csv")]) == 1
    printed = capsys.readouterr().out
    assert "not measured here: docker thing: no Docker engine" in printed and "local thing" in printed
    assert run.main(["--quick", "--out", str(tmp_path / "quick.csv")]) == 0  # quick mode lists it, judges nothing
