"""`bench merge --config --require-complete` against the matrix (bench/run/merge_check.py): the clean case merges,
and each row that does not belong is refused in one line (another max_steps, an unplanned window, a shard of
another N, a duplicated run, another setup), or kept apart and listed with --keep-extra. Rows are made with the
plan's own cells (bench.run.plan.matrix_cells), as the bench writes them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench import ROOT
from bench.cli import main
from bench.config import BenchConfig
from bench.results.append import append_row, encode_line, read_rows
from bench.results.read import read_runs
from bench.results.schema import COLUMNS
from bench.run.merge import extra_file, missing_file, report_file
from bench.run.plan import matrix_cells, plan_runs
from bench.run.shards import Shard, shard_plan

MATRIX = {"use_jeff": False, "fixtures": ["todo_repo"], "presets": ["part3"], "ctx": [4096], "reps": 3}
SHARDS = 2


def shard_rows(index: int, **cells: str) -> list[dict[str, str]]:
    """The rows shard `index` of SHARDS writes for MATRIX, every one `done`, `cells` applied to each."""
    config = BenchConfig(**MATRIX)  # type: ignore[arg-type]
    made = []
    for run in shard_plan(plan_runs(config, ROOT), Shard(index, SHARDS)):
        row = {column: "" for column in COLUMNS} | matrix_cells(run, config)
        row |= {"run_id": f"s{index}-r{run.rep}", "started_at": f"2026-12-01T10:0{run.rep}:00", "stop_reason": "done"}
        row |= {"agent_version": "v1", "flint_model": "f.gguf", "server_build": "b1", "shard": f"{index}/{SHARDS}"}
        made.append(row | cells)
    return made


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_bytes(encode_line(COLUMNS))
    for row in rows:
        append_row(path, row)
    return path


def merge(tmp_path: Path, *files: Path, flags: tuple[str, ...] = ()) -> int:
    config = tmp_path / "bench.yaml"
    config.write_text(yaml.safe_dump(MATRIX))
    argv = [
        "merge",
        *map(str, files),
        "--out",
        str(tmp_path / "merged.csv"),
        "--config",
        str(config),
        "--shards",
        str(SHARDS),
        "--require-complete",
        *flags,
    ]
    return main(argv)


def test_the_shards_of_the_matrix_merge_and_the_report_says_what_was_merged(tmp_path: Path) -> None:
    one, two = write(tmp_path / "a.csv", shard_rows(1)), write(tmp_path / "b.csv", shard_rows(2))
    assert merge(tmp_path, one, two) == 0
    merged = tmp_path / "merged.csv"
    assert sorted(row["run_id"] for row in read_rows(merged)) == ["s1-r1", "s1-r3", "s2-r2"]
    assert missing_file(merged).read_text() == "" and not extra_file(merged).exists()
    report = report_file(merged).read_text().splitlines()
    assert report[0] == f"merged 2 files: 3 rows -> {merged}"
    assert report[1:3] == [f"  {one}: 2 rows of shard 1/2", f"  {two}: 1 rows of shard 2/2"]


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"max_steps": "7"}, "run with max_steps '7', the matrix's is '30'"),
        ({"ctx": "8192"}, "not in the plan: ctx 8192 is not among the matrix's (4096)"),
        ({"rep": "4"}, "not in the plan: rep 4 is not among the matrix's (1, 2, 3)"),
        ({"shard": "2/3"}, "of a split into 3 shards, not the matrix's 2"),
        ({"shard": "1/2"}, "not a run of shard 1/2: that run is dealt to shard 2/2"),
        ({"server_build": "b2"}, "another setup than the matrix's: server_build 'b2', the matrix's 'b1'"),
    ],
    ids=["max_steps", "unplanned-window", "unplanned-rep", "another-N", "another-shard", "another-build"],
)
def test_a_row_that_does_not_belong_is_refused_in_one_line_and_nothing_is_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, changed: dict[str, str], says: str
) -> None:
    one = write(tmp_path / "a.csv", shard_rows(1))
    two = write(tmp_path / "b.csv", shard_rows(2, **changed))
    assert merge(tmp_path, one, two) == 2
    line = refusal(caplog)
    assert "1 rows do not belong to the matrix (first: s2-r2 (" in line and says in line, line
    assert "--keep-extra" in line and not (tmp_path / "merged.csv").exists()


def test_a_run_measured_twice_is_refused_but_an_infra_error_beside_its_measured_row_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = write(tmp_path / "a.csv", shard_rows(1)), shard_rows(2)
    again = {**two[0], "run_id": "s2-r2-again", "started_at": "2026-12-01T11:00:00"}
    assert merge(tmp_path, one, write(tmp_path / "b.csv", [*two, again])) == 2
    line = refusal(caplog)
    assert "(first: s2-r2-again (" in line and "a second row of a run already measured by s2-r2" in line
    failed = {**two[0], "run_id": "s2-r2-failed", "started_at": "2026-12-01T09:00:00", "stop_reason": "infra_error"}
    assert merge(tmp_path, one, write(tmp_path / "c.csv", [failed, *two])) == 0  # --resume ran it again: both kept
    assert [row["run_id"] for row in read_rows(tmp_path / "merged.csv")] == ["s2-r2-failed", "s1-r1", "s2-r2", "s1-r3"]


def test_keep_extra_keeps_them_apart_lists_them_and_still_checks_completeness(tmp_path: Path) -> None:
    one = write(tmp_path / "a.csv", shard_rows(1))
    two = write(tmp_path / "b.csv", shard_rows(2, max_steps="7"))
    assert merge(tmp_path, one, two, flags=("--keep-extra",)) == 1  # rep 2 only ran with another max_steps
    merged = tmp_path / "merged.csv"
    assert [row["run_id"] for row in read_rows(merged)] == ["s1-r1", "s1-r3"]
    assert [row["run_id"] for row in read_rows(extra_file(merged))] == ["s2-r2"]
    report = report_file(merged).read_text()
    assert f"1 rows that do not belong to the matrix, kept apart in {extra_file(merged)}:" in report
    assert "  extra: s2-r2 (todo_repo part3 ctx=4096 rep=2, shard 2/2): run with max_steps '7'" in report
    assert missing_file(merged).read_text() == "todo_repo part3 ctx=4096 rep=2\n"


def refusal(caplog: pytest.LogCaptureFixture) -> str:
    """The one line the command's refusal printed (bench.cli logs it)."""
    (record,) = [record for record in caplog.records if record.name == "bench.cli" and record.levelname == "ERROR"]
    assert "\n" not in record.getMessage()
    return record.getMessage()


def test_a_cell_that_is_not_utf8_is_merged_unchanged_and_shown_readably(tmp_path: Path) -> None:
    """A shard whose error cell holds a Latin-1 byte (a tool's message in another encoding): merge keeps the byte
    as it came, and the read-only commands show it as U+FFFD rather than crash."""
    latin = "caf\udce9 broke"  # the reader keeps the byte 0xE9 as this escape
    first = write(tmp_path / "s1.csv", shard_rows(1, error=latin))
    second = write(tmp_path / "s2.csv", shard_rows(2))
    assert b"caf\xe9 broke" in first.read_bytes()
    assert merge(tmp_path, first, second) == 0
    merged = tmp_path / "merged.csv"
    assert merged.read_bytes().count(b"caf\xe9 broke") == len(shard_rows(1))
    assert {run.text("error") for run in read_runs(merged)} >= {"caf\ufffd broke"}
    assert main(["view", str(merged), "--out", str(tmp_path / "page.html")]) == 0
    assert "caf\ufffd broke" in (tmp_path / "page.html").read_text(encoding="utf-8")
