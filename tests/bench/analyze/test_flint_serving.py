"""Rows of a Flint forced to call tools (flint_serving forced_tools) are never compared or pooled with native rows,
in any command that groups rows; files written before the column existed read as native."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bench.analyze.compare import compare
from bench.analyze.nights import line_up
from bench.analyze.report import write_report
from bench.cli import main
from bench.results.migrate import migrate
from bench.results.read import read_runs
from bench.results.schema import COLUMNS

Capture = pytest.CaptureFixture[str]
FORCED = {"flint_serving": "forced_tools"}


def row(run_id: str, wall_s: float, **values: str) -> dict[str, str]:
    base = {"run_id": run_id, "started_at": "2026-11-30T02:00:00+00:00", "fixture": "todo_repo", "preset": "part3"}
    base |= {"ctx": "2048", "flint_model": "smollm2.gguf", "jeff_model": "smollm2.gguf", "flint_serving": "native"}
    return base | {"stop_reason": "done", "hidden_passed": "6", "hidden_total": "6", "wall_s": str(wall_s)} | values


def runs(prefix: str, walls: list[float], **values: str) -> list[dict[str, str]]:
    return [row(f"{prefix}{i}", wall, **values) for i, wall in enumerate(walls)]


def write(path: Path, rows: list[dict[str, str]], columns: list[str] = COLUMNS) -> str:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({c: r.get(c, "") for c in columns} for r in rows)
    return str(path)


def sections(text: str) -> dict[str, str]:
    """Each `## heading` of a markdown text and its body."""
    parts = text.split("\n## ")[1:]
    return {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in parts}


NATIVE_WALLS = [100.0, 101, 99, 102, 98, 100]
FORCED_WALLS = [400.0, 410, 390, 405, 395, 400]  # four times slower, and never done in truth


def test_compare_keeps_forced_rows_apart_and_no_gate_trips_across_them(tmp_path: Path, capsys: Capture) -> None:
    old = write(tmp_path / "old.csv", runs("a", NATIVE_WALLS))
    new = write(tmp_path / "new.csv", runs("b", FORCED_WALLS, **FORCED, stop_reason="step_limit"))
    text, tripped = compare([old, new])
    assert not tripped
    groups = sections(text)
    assert set(groups) == {"flint_serving native", "flint_serving forced_tools"}
    assert "| wall_s | 100 [98–102] | — |" in groups["flint_serving native"]
    assert "| wall_s | — | 400 [390–410] |" in groups["flint_serving forced_tools"]
    assert "new.csv vs old.csv" not in text  # no changes table: nothing was compared
    assert main(["compare", old, new, "--fail-on", "wall_s:10", "--fail-on", "completed"]) == 0
    assert "FAIL" not in capsys.readouterr().out


def test_a_pooled_baseline_never_takes_native_rows_for_a_forced_configuration(tmp_path: Path) -> None:
    nights = [write(tmp_path / f"night-{i}.csv", runs(f"n{i}-", NATIVE_WALLS)) for i in range(3)]
    tonight = write(tmp_path / "tonight.csv", runs("t", FORCED_WALLS, **FORCED))
    text, tripped = compare([*nights, tonight], pool_last=3)
    assert not tripped
    assert "No earlier file holds this setup." in text
    assert "| wall_s | — | 400 [390–410] |" in text


def test_history_gives_forced_nights_a_series_of_their_own(tmp_path: Path) -> None:
    files = [write(tmp_path / f"n{i}.csv", runs(f"n{i}-", NATIVE_WALLS)) for i in range(2)]
    files.append(write(tmp_path / "n2.csv", runs("f", FORCED_WALLS, **FORCED)))
    series = line_up(files)
    assert sorted(len(nights) for nights in series.values()) == [1, 2]


def test_report_groups_forced_rows_apart_and_says_so_in_the_title(tmp_path: Path) -> None:
    results = write(tmp_path / "results.csv", [*runs("a", [100, 101]), *runs("b", [400, 410], **FORCED)])
    text = write_report(Path(results), tmp_path / "report").read_text(encoding="utf-8")
    assert "| flint_serving native | 2 |" in text and "| flint_serving forced_tools | 2 |" in text


def test_a_file_written_before_the_column_reads_as_native_and_is_compared_with_native_rows(tmp_path: Path) -> None:
    before = [c for c in COLUMNS if c != "flint_serving"]
    old = write(tmp_path / "old.csv", runs("a", NATIVE_WALLS), before)
    assert {r.flint_serving for r in read_runs(old)} == {"native"}
    new = write(tmp_path / "new.csv", runs("b", NATIVE_WALLS))
    text, _ = compare([old, new])
    assert "new.csv vs old.csv" in text  # one group, compared
    assert "migrated" in migrate(Path(old))
    assert {r.flint_serving for r in read_runs(old)} == {"native"}
    assert "flint_serving" in Path(old).read_text().splitlines()[0].split(",")
