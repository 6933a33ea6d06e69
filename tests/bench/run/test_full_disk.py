"""A full disk under the artifacts, on a real size-limited file system (a tmpfs this test mounts as root): the bench
ends with the one line the row write gives, exit 2, every row already written intact, and the cut run's folder
marked; exit statuses each mean one thing (SIGTERM 143, a bug 3)."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from fake_flint_bench import fake_flint_argv
from tmpfs import fill

from bench import cli
from bench.errors import Terminated
from bench.results.append import read_rows
from bench.run import grade as grade_module
from bench.run.finishing import on_sigterm
from bench.testing import fake_llama


def test_a_disk_that_fills_up_while_grading_ends_the_bench_with_one_line_and_keeps_its_rows(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = small_disk / "results.csv"
    grade = grade_module.score_run_dir
    graded: list[Path] = []

    def disk_full_before_the_second_grading(run_dir: Path, *args: Any, **kwargs: Any) -> Any:
        graded.append(run_dir)
        if len(graded) == 2:
            fill(small_disk)  # junit.xml and score.json of the second run find no space
        return grade(run_dir, *args, **kwargs)

    monkeypatch.setattr(grade_module, "score_run_dir", disk_full_before_the_second_grading)
    with fake_llama.FakeLlama() as flint:
        status = cli.main(fake_flint_argv(flint, out, "--reps", "2", "--max-steps", "2"))
    assert status == cli.EXIT_ERROR == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"bench: cannot write into {graded[1]}: No space left on device")
    assert f"the rows already in {out} are intact" in last and "--resume" in last
    assert "Traceback" not in capsys.readouterr().err
    (row,) = read_rows(out)
    assert row["rep"] == "1"
    assert not graded[1].exists() and graded[1].with_name(graded[1].name + ".interrupted").is_dir()


def test_sigterm_exits_143_and_a_bug_exits_3_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.analyze import compare

    def terminated(args: object) -> int:
        on_sigterm(15, None)  # what the bench's SIGTERM handler does
        return 0

    monkeypatch.setattr(compare, "command", terminated)
    assert cli.main(["compare", "a.csv"]) == cli.EXIT_SIGTERM == 143
    with pytest.raises(Terminated):
        on_sigterm(15, None)

    def broken(args: object) -> int:
        raise ValueError("a bug")

    monkeypatch.setattr(compare, "command", broken)
    assert cli.main(["compare", "a.csv"]) == cli.EXIT_BUG == 3

    def disk_full(args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", "report/plot.png")

    monkeypatch.setattr(compare, "command", disk_full)
    assert cli.main(["compare", "a.csv"]) == 2
