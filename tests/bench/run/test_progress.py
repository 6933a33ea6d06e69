import io
import json
from pathlib import Path

import pytest

from bench.run.display import Display, LaneProgress
from bench.run.ending import ending
from bench.run.progress import MatrixClock, Progress, TraceFollower
from bench.run.screen import fit


def test_follower_reads_complete_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    seen: list[dict] = []
    follower = TraceFollower(path, seen.append)
    follower.poll()  # no file yet
    path.write_text(json.dumps({"event": "start"}) + "\n" + '{"event": "resp')
    follower.poll()
    assert [e["event"] for e in seen] == ["start"]
    with open(path, "a") as f:
        f.write('onse", "step": 1}\n')
    follower.poll()
    assert [e["event"] for e in seen] == ["start", "response"]


def test_progress_lines_say_window_use_and_tokens_apart_with_the_matrixs_time() -> None:
    out, now = io.StringIO(), [100.0]
    progress = Progress(total=3, stream=out, matrix=MatrixClock(3, now=lambda: now[0]))
    progress.run_started(1, "todo_repo", "part3", 4096, 1)
    usage = {"prompt_tokens": 1000, "completion_tokens": 1048, "total_tokens": 2048}
    progress.on_event({"event": "response", "step": 1, "usage": usage, "finish_reason": "stop"})
    now[0] += 42
    progress.on_event({"event": "response", "step": 2, "usage": usage, "finish_reason": "stop"})
    now[0] += 18  # the first run took a minute
    progress.run_finished({"stop_reason": "done", "hidden_passed": "2", "hidden_total": "6", "wall_s": "25.0"})
    progress.run_skipped(2, "results.csv")  # already measured: it costs nothing, and leaves one run to go
    lines = out.getvalue().splitlines()
    assert lines[1] == (
        "run 1/3 todo_repo part3 ctx=4096 rep=1: step 1: window 50% (2,048 of 4,096 tokens), 2,048 tokens sent in "
        "the run (stop); elapsed 0:00, ETA after the first run"
    )
    assert "step 2: window 50% (2,048 of 4,096 tokens), 4,096 tokens sent in the run" in lines[2]
    assert lines[2].endswith("elapsed 0:42, ETA after the first run")
    assert lines[3].endswith("done, hidden 2/6, 25.0 s; elapsed 1:00, ETA 2:00")
    assert MatrixClock(3, now=lambda: now[0]).text() == "elapsed 0:00, ETA after the first run"


def test_workers_share_one_clock() -> None:
    display = Display(["gpu 0", "gpu 1"], io.StringIO())
    first, second = LaneProgress(display, 0, 4), LaneProgress(display, 1, 4)
    assert first.matrix is second.matrix


def test_the_eta_falls_while_runs_run_and_never_rises_before_the_next_finishes() -> None:
    """Pace from the finished runs; the running ones as far along as the time since the last finish."""
    now = [0.0]
    matrix = MatrixClock(4, now=lambda: now[0])
    assert matrix.eta_s() is None and matrix.short() == "0:00 in"
    now[0] = 60.0
    matrix.run_done()  # one minute a run, three to go
    seen = []
    for _ in range(40):  # the second run runs long: 200 s, past its minute
        seen.append(matrix.eta_s())
        now[0] += 5
    assert seen[0] == 180 and seen == sorted(seen, reverse=True) and seen[-1] == 0  # never below 0, never up
    matrix.run_done()
    assert matrix.eta_s() == 260  # a slower pace now: 130 s a run, two to go, none of the next run done yet
    assert matrix.text() == "elapsed 4:20, ETA 4:20"


def test_a_line_that_does_not_fit_the_terminal_takes_its_short_form_or_is_cut() -> None:
    assert fit(["a" * 90, "b" * 70], 80) == "b" * 70
    assert fit(["a" * 90, "b" * 85], 80) == "b" * 78 + "…"
    assert fit(["a" * 79], 80) == "a" * 79


def test_the_ending_counts_each_configuration_and_says_what_to_run_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    cells = {"fixture": "todo_repo", "ctx": "4096", "hidden_total": "6", "steps": "10"}
    rows = [
        {**cells, "run_id": "a", "preset": "part3", "stop_reason": "done", "hidden_passed": "6", "wall_s": "10"},
        {**cells, "run_id": "b", "preset": "part3", "stop_reason": "step_limit", "hidden_passed": "2", "wall_s": "30"},
        {**cells, "run_id": "c", "preset": "late", "stop_reason": "infra_error", "error": "the server died"},
        {**cells, "run_id": "d", "preset": "late", "stop_reason": "done", "failure_labels": "cut_answers"},
    ]
    lines = ending(rows, Path("results/x.csv"), ran=2).splitlines()
    assert lines[0].split() == ["configuration", "completed", "wall", "s", "steps", "reprocessed", "failure", "labels"]
    assert lines[1].split() == ["part3", "1", "of", "2", "20", "10", "n/a", "none"]
    assert lines[2].split() == ["late", "0", "of", "1", "(+1", "infra_error)", "n/a", "10", "n/a", "cut_answers", "1"]
    assert lines[3:] == [
        "results: results/x.csv (4 rows, 2 from this bench)",
        "log: results/x.csv.log",
        "next: bench view results/x.csv",
        "      bench report results/x.csv",
        "      bench compare results/x.csv --by preset",
    ]
    assert ending([], Path("x.csv"), ran=0) == ""
