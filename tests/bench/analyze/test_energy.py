"""Energy per solved task: GPU rows whose joules come from the NVML fake's energy counter (the sampler's reading, as a
bench fills a row), in `compare`'s values table and `report`'s GPU table, every run's joules over the runs that
completed."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from test_compare import run_row, write_results

from bench.analyze.compare import compare
from bench.analyze.compare_json import document as document_of
from bench.analyze.comparison import CompareOptions, build
from bench.analyze.energy import fmt_energy_per_completed
from bench.analyze.report import write_report, written_report
from bench.json_documents import SCHEMAS
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler
from bench.results.row import ResultRow
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State

FLINT = 111


def sampled_joules(start_mj: int, end_mj: int) -> str:
    """A run's gpu_energy_j cell as the sampler fills it, its card's counter reading `start_mj` then `end_mj`."""
    state = State(used=5 * GIB, processes=[(FLINT, 4 * GIB)])
    card = FakeDevice("GPU-a", [state, state, state], energy_mj=[start_mj, end_mj])
    matcher = PidMatcher({"flint": FLINT}, proc_root=Path("/nonexistent"))
    sampler = GpuSampler(matcher, nvml=FakeNvml([card]), device_uuids=["GPU-a"], interval_s=0.01)
    sampler.baseline()
    sampler.start()
    row = ResultRow()
    sampler.stop().fill(row)
    return row.cells()["gpu_energy_j"]


def test_the_rows_joules_are_the_counters_rise() -> None:
    assert sampled_joules(2_000_000, 2_900_000) == "900.0"


def test_energy_per_completed_run_counts_the_failed_runs_joules_too(tmp_path: Path) -> None:
    old = [run_row(f"a{i}", gpu_energy_j=sampled_joules(0, 1_000_000)) for i in range(3)]  # 3 solved, 1,000 J each
    new = [run_row(f"b{i}", gpu_energy_j=sampled_joules(0, 600_000)) for i in range(2)]
    new.append(run_row("b2", gpu_energy_j=sampled_joules(0, 600_000), stop_reason="step_limit", hidden_passed="2"))
    text, _ = compare([write_results(tmp_path / "old.csv", old), write_results(tmp_path / "new.csv", new)])
    line = next(line for line in text.splitlines() if line.startswith("| GPU energy per completed run |"))
    assert line == "| GPU energy per completed run | 1,000 J | 900 J |"  # 1,800 J over 2 solved
    assert next(line for line in text.splitlines() if line.startswith("| gpu_energy_j |")).startswith(
        "| gpu_energy_j | 1,000 [1,000–1,000] | 600 [600–600] |"
    )


def test_a_run_without_energy_or_no_completed_run_says_so_and_never_guesses() -> None:
    def row(joules: float | None, done: bool = True) -> ResultRow:
        row = ResultRow(gpu_energy_j=joules, stop_reason="done" if done else "step_limit")
        row.hidden_passed, row.hidden_total = (6 if done else 2), 6
        return row

    assert fmt_energy_per_completed([row(500.0), row(None)]) == "n/a"  # a partial sum would be too low
    assert fmt_energy_per_completed([row(500.0, done=False)]) == "n/a (none completed; 500 J in all)"
    infra = ResultRow(gpu_energy_j=9999.0, stop_reason="infra_error")
    assert fmt_energy_per_completed([row(300.0), row(200.0, done=False), infra]) == "500 J"


@pytest.mark.slow  # the report draws its PNG plots
def test_the_report_s_gpu_table_has_the_energy_per_completed_run(tmp_path: Path) -> None:
    rows = [run_row(f"r{i}", peak_gpu_mib_flint="4096", gpu_energy_j=sampled_joules(0, 750_000)) for i in range(2)]
    path = Path(write_results(tmp_path / "results.csv", rows))
    text = write_report(path, tmp_path).read_text(encoding="utf-8")
    assert "| group | peak MiB, Flint | GPU energy per completed run |" in text
    assert "| 4,096 [4,096–4,096] | 750 J |" in text


@pytest.mark.slow  # the report draws its PNG plots
def test_report_json_and_compare_json_give_the_joules_per_completed_run_and_null_where_unmeasured(
    tmp_path: Path,
) -> None:
    """The numbers a script reads: gpu_energy_j's spread per group and the joules per completed run (1,800 J over 2
    solved), null for a group where a run measured no energy; both documents still fit their schemas."""
    solved = [run_row(f"b{i}", gpu_energy_j=sampled_joules(0, 600_000)) for i in range(2)]
    failed = run_row("b2", gpu_energy_j=sampled_joules(0, 600_000), stop_reason="step_limit", hidden_passed="2")
    path = Path(write_results(tmp_path / "gpu.csv", [*solved, failed]))
    _, document = written_report(path, tmp_path / "report")
    (group,) = document["groups"]
    assert group["gpu_energy_j_per_completed"] == 900.0
    assert (group["metrics"]["gpu_energy_j"]["median"], group["metrics"]["gpu_energy_j"]["count"]) == (600.0, 3)
    jsonschema.Draft202012Validator(SCHEMAS["report"]).validate(document)
    unmeasured = Path(write_results(tmp_path / "cpu.csv", [run_row("c0"), run_row("c1")]))
    found = document_of(build(CompareOptions(files=[str(unmeasured), str(path)])))
    sides = found["groups"][0]["sides"]
    assert [side["gpu_energy_j_per_completed"] for side in sides] == [None, 900.0]
    jsonschema.Draft202012Validator(SCHEMAS["compare"]).validate(found)
