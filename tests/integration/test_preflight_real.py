"""`--ctx 512` on todo_repo with the real llama-server (embedded, CPU): the task's first request, counted by the
server's own tokenizer, does not fit, and the bench refuses before its first run, naming the window that fits
(bench/run/preflight.py). Before, every run stopped at step 0 with context_exhausted and the bench exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import cli
from bench.results.append import read_rows

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def test_ctx_512_on_todo_repo_is_refused_before_the_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.csv"
    argv = ["run", "--servers", "embedded", "--sandbox", "local", "--fixtures", "todo_repo", "--presets", "part2"]
    settings = tmp_path / "bench.yaml"
    settings.write_text("use_jeff: false\n")
    status = cli.main([*argv, "--config", str(settings), "--ctx", "512", "--reps", "3", "--out", str(out)])
    assert status == cli.EXIT_ERROR
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("bench: fixture todo_repo: the task cannot fit the smallest configured window (512 tokens)")
    assert "'s tokenizer" in last and "nothing was run" in last, last
    needed = int(last.split("(--ctx ")[1].split(")")[0])
    assert needed > 512 and needed % 256 == 0, last
    assert not list((tmp_path / "runs").glob("*/events.jsonl")) and (not out.exists() or read_rows(out) == [])
