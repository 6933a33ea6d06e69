"""What `bench merge` refuses in one line, writing nothing (bench/run/merge.py): cells compare would refuse, shards
of two commits, a file a bench is still writing (a shard not ended, or the merge's own output); and a bench state
folder that is not a folder (bench/run/instance.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.errors import ConfigError, ResultsError
from bench.results.append import append_row, encode_line
from bench.results.lock import ResultsLock
from bench.results.schema import COLUMNS
from bench.run.instance import STATE_DIR_VARIABLE, state_dir
from bench.run.merge import merge


def row(run: int, **cells: str) -> dict[str, str]:
    base = {column: "" for column in COLUMNS}
    base |= {"run_id": f"r{run}", "started_at": f"2026-12-01T10:{run:02d}:00", "fixture": "todo_repo"}
    base |= {"preset": "part3", "ctx": "4096", "rep": str(run), "stop_reason": "done", "agent_version": "v1"}
    base |= {"sampling": '{"temperature": 0}', "flint_model": "f.gguf", "git_sha": "a" * 40}
    return base | cells


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_bytes(encode_line(COLUMNS))
    for one in rows:
        append_row(path, one)
    return path


@pytest.mark.parametrize(
    ("cells", "column", "said"),
    [
        ({"wall_s": "inf"}, "wall_s", "inf is not a measurement"),
        ({"wall_s": "-5"}, "wall_s", "-5 is negative"),
        ({"stop_reason": "exploded"}, "stop_reason", "'exploded' is no stop reason"),
        ({"hidden_passed": "99", "hidden_total": "6"}, "hidden_passed", "99 is more than hidden_total 6"),
    ],
)
def test_a_cell_compare_refuses_is_refused_by_merge_naming_file_row_and_column(
    tmp_path: Path, cells: dict[str, str], column: str, said: str
) -> None:
    a = write(tmp_path / "a.csv", [row(1)])
    b = write(tmp_path / "b.csv", [row(2), row(3, **cells)])
    with pytest.raises(ResultsError) as refused:
        merge([a, b], tmp_path / "merged.csv")
    assert str(refused.value).startswith(f"merge: {b}: row 3 (run r3), column {column}: {said}")
    assert not (tmp_path / "merged.csv").exists()


def test_shards_of_two_commits_are_refused(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", [row(1)])
    b = write(tmp_path / "b.csv", [row(2, git_sha="b" * 40)])
    with pytest.raises(ResultsError, match=f"{b}: column git_sha is 'b{{40}}' in run r2, but 'a{{40}}' in {a}"):
        merge([a, b], tmp_path / "merged.csv")


def test_a_file_a_bench_still_writes_is_refused_as_input_and_as_output(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", [row(1)])
    b = write(tmp_path / "b.csv", [row(2)])
    holder = ResultsLock(b)  # what a bench holds for its whole life
    holder.acquire()
    try:
        with pytest.raises(ResultsError, match=rf"merge: a bench \(pid \d+\) is still writing {b}: merge once it ends"):
            merge([a, b], tmp_path / "merged.csv")
        with pytest.raises(ResultsError, match=rf"merge: a bench \(pid \d+\) is still writing {b}"):
            merge([a, b], b)  # into a file a bench writes: refused, nothing mixed
    finally:
        holder.release()
    merged = merge([a, b], tmp_path / "merged.csv")
    assert [r["run_id"] for r in merged.rows] == ["r1", "r2"]


def test_a_state_folder_that_is_a_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "state").write_text("")
    for folder in (tmp_path / "state", tmp_path / "state" / "instances"):
        monkeypatch.setenv(STATE_DIR_VARIABLE, str(folder))
        with pytest.raises(ConfigError, match=f"{tmp_path / 'state'} is not a folder; remove it, or set"):
            state_dir()


@pytest.mark.usefixtures("child_processes")
def test_bench_run_with_a_state_folder_that_is_a_file_says_so_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), STATE_DIR_VARIABLE: str(tmp_path / "state")}
    argv = [sys.executable, "-m", "bench", "run", "--servers", "external", "--flint-url", "http://127.0.0.1:9"]
    done = subprocess.run(
        [*argv, "--sandbox", "local", "--out", str(tmp_path / "r.csv")],
        cwd=Path(__file__).resolve().parents[3],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and f"{tmp_path / 'state'} is not a folder" in done.stderr, done.stderr
