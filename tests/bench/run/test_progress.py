import io
import json
from pathlib import Path

from bench.run.display import Display, LaneProgress
from bench.run.progress import MatrixClock, Progress, TraceFollower, summary_table


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


def test_summary_table_has_one_line_per_run() -> None:
    rows = [
        {
            "fixture": "todo_repo",
            "preset": "part2",
            "ctx": "4096",
            "rep": "1",
            "stop_reason": "done",
            "hidden_passed": "2",
            "hidden_total": "6",
        }
    ]
    table = summary_table(rows).splitlines()
    assert len(table) == 2 and "2/6" in table[1] and table[0].split()[0] == "fixture"
