"""Rows that cannot shift or be half-written: header checks, rows cut short by a crash, a full disk, migrate."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.cli import main
from bench.errors import ResultsError
from bench.results import append
from bench.results.append import append_row, completed_keys, read_rows, set_aside_partial_row
from bench.results.migrate import migrate
from bench.results.read import read_runs
from bench.results.schema import COLUMNS, INPUT_COLUMNS, run_key

Capture = pytest.CaptureFixture[str]


def row(run_id: str, **values: str) -> dict[str, str]:
    base = {"run_id": run_id, "fixture": "todo_repo", "preset": "part3", "ctx": "4096", "rep": "1"}
    return {**base, "stop_reason": "done", "wall_s": "12.5", "error": 'a, "quoted"\nline', **values}


def write_with(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    """A file as another version of the bench wrote it: its own columns, its own order."""
    for values in rows:
        append_row(path, {c: v for c, v in values.items() if c in columns}, columns)


def swapped(columns: list[str], a: str, b: str) -> list[str]:
    out = list(columns)
    i, j = out.index(a), out.index(b)
    out[i], out[j] = out[j], out[i]
    return out


@pytest.mark.parametrize(
    ("old_columns", "says"),
    [
        (swapped(COLUMNS, "preset", "ctx"), "same names in another order: column 5 is 'ctx', now 'preset'"),
        ([c for c in COLUMNS if c != "gpu_uuid"], "lacks gpu_uuid"),
        ([*COLUMNS, "retired_column"], "has retired_column"),
    ],
)
def test_a_file_of_another_layout_is_refused_with_the_way_on(tmp_path: Path, old_columns: list[str], says: str) -> None:
    out = tmp_path / "old.csv"
    write_with(out, old_columns, [row("a")])
    before = out.read_bytes()
    with pytest.raises(ResultsError) as refused:
        append_row(out, row("b"))
    message = str(refused.value)
    assert says in message and "\n" not in message
    assert "--out" in message and f"python -m bench migrate {out}" in message
    with pytest.raises(ResultsError, match="other columns"):
        read_rows(out)
    assert out.read_bytes() == before  # nothing was added under the wrong names


def test_migrate_keeps_every_value_under_its_own_name_then_appending_works(tmp_path: Path, capsys: Capture) -> None:
    """The issue's case: ctx and preset swapped by an older version would have read back preset=4096, ctx=part3."""
    out = tmp_path / "old.csv"
    old_columns = [c for c in swapped(COLUMNS, "preset", "ctx") if c != "gpu_uuid"] + ["retired_empty"]
    write_with(out, old_columns, [row("a", gpu_uuid="dropped-by-old-version"), row("b", preset="part2")])
    assert main(["migrate", str(out)]) == 0
    said = capsys.readouterr().out
    assert "2 rows rewritten under the current columns (lacks gpu_uuid; has retired_empty)" in said
    assert (tmp_path / "old.csv.bak").exists()
    append_row(out, row("c", ctx="8192"))
    rows = read_rows(out)
    assert [(r["run_id"], r["preset"], r["ctx"], r["gpu_uuid"]) for r in rows] == [
        ("a", "part3", "4096", ""),
        ("b", "part2", "4096", ""),
        ("c", "part3", "8192", ""),
    ]
    assert rows[0]["error"] == 'a, "quoted"\nline'


def test_migrate_refuses_to_drop_a_column_that_holds_values(tmp_path: Path) -> None:
    out = tmp_path / "old.csv"
    write_with(out, [*COLUMNS, "retired"], [row("a", retired="13.2")])
    with pytest.raises(ResultsError, match=r"values in columns this version does not know \(retired\)"):
        migrate(out)
    assert not (tmp_path / "old.csv.bak").exists()


def test_a_row_cut_short_by_a_crash_is_set_aside_and_its_run_runs_again(tmp_path: Path, capsys: Capture) -> None:
    out = tmp_path / "results.csv"
    append_row(out, row("a"))
    append_row(out, row("b", rep="2"))
    whole = out.read_bytes()
    second = whole.index(b"\r\nb,") + 2
    out.write_bytes(whole[: second + 40])  # the crash: the second row stops after 40 bytes
    rows = read_rows(out)  # reading changes nothing
    assert [r["run_id"] for r in rows] == ["a"]
    assert out.read_bytes() == whole[: second + 40]
    assert run_key(row("b", rep="2")) not in completed_keys(rows)  # so --resume runs it again
    note = set_aside_partial_row(out)
    assert note is not None and "\n" not in note and "results.csv.partial" in note and "run again" in note
    assert (tmp_path / "results.csv.partial").read_bytes() == whole[second : second + 40] + b"\n"
    assert out.read_bytes() == whole[:second]
    assert set_aside_partial_row(out) is None


def test_appending_after_a_cut_row_sets_it_aside_first(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "results.csv"
    append_row(out, row("a"))
    with open(out, "ab") as f:
        f.write(b'b,2026,"an open quote\n')  # cut right after a line break inside a quoted value
    append_row(out, row("c"))
    assert "cut short" in caplog.text
    assert [r["run_id"] for r in read_rows(out)] == ["a", "c"]
    assert (tmp_path / "results.csv.partial").read_bytes() == b'b,2026,"an open quote\n'


def test_the_readers_leave_a_cut_row_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "results.csv"
    append_row(out, row("a"))
    with open(out, "ab") as f:
        f.write(b"b,2026-11-30,abc,todo_repo,part3,40")
    assert [r.run_id for r in read_runs(out)] == ["a"]
    assert "last row was cut short" in caplog.text


def test_an_empty_file_counts_as_new(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    out.write_bytes(b"")
    assert read_rows(out) == []
    append_row(out, row("a"))
    assert [r["run_id"] for r in read_rows(out)] == ["a"]


def test_infra_error_rows_run_again_on_resume() -> None:
    measured, failed = row("a"), row("b", rep="2", stop_reason="infra_error")
    assert completed_keys([measured, failed]) == {run_key(measured)}
    assert len(INPUT_COLUMNS) == len(run_key(measured))


def test_a_full_disk_is_one_line_naming_the_file_and_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results.csv"
    append_row(out, row("a"))
    before = out.read_bytes()
    real_write = os.write

    def disk_fills_up(fd: int, data: bytes) -> int:  # takes 30 bytes, then the disk is full
        if len(data) > 30:
            return real_write(fd, data[:30])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(append.os, "write", disk_fills_up)
    with pytest.raises(ResultsError) as full:
        append_row(out, row("b"))
    assert str(full.value).startswith(f"cannot write a row to {out}: No space left on device")
    assert "\n" not in str(full.value) and "--resume" in str(full.value)
    assert out.read_bytes() == before
    monkeypatch.undo()
    append_row(out, row("c"))
    assert [r["run_id"] for r in read_rows(out)] == ["a", "c"]


@pytest.mark.usefixtures("child_processes")
def test_a_real_short_write_leaves_no_half_row(tmp_path: Path) -> None:
    """The kernel itself refuses the rest of a write: a file size limit (RLIMIT_FSIZE) set in a child process."""
    out = tmp_path / "results.csv"
    append_row(out, row("a"))
    limit = out.stat().st_size + 200  # the next row is longer than 200 bytes: it is cut by the kernel
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from pathlib import Path
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        from bench.errors import ResultsError
        from bench.results.append import append_row
        try:
            append_row(Path({str(out)!r}), {row("b", error="x" * 500)!r})
        except ResultsError as e:
            print(e)
            sys.exit(3)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    assert result.stdout.startswith(f"cannot write a row to {out}: File too large")
    assert [r["run_id"] for r in read_rows(out)] == ["a"]
    assert out.stat().st_size < limit and not (tmp_path / "results.csv.partial").exists()
