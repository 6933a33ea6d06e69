import io
import json
from pathlib import Path

from bench.run.progress import Progress, TraceFollower, summary_table


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


def test_progress_lines_show_step_fill_and_tokens() -> None:
    out = io.StringIO()
    progress = Progress(total=2, stream=out)
    progress.run_started(1, "todo_repo", "part3", 4096, 1)
    usage = {"prompt_tokens": 1000, "completion_tokens": 1048, "total_tokens": 2048}
    progress.on_event({"event": "response", "step": 1, "usage": usage, "finish_reason": "stop"})
    progress.run_finished({"stop_reason": "done", "hidden_passed": "2", "hidden_total": "6", "wall_s": "25.0"})
    text = out.getvalue()
    assert "run 1/2 todo_repo part3 ctx=4096 rep=1: step 1 window 50% tokens 2048 (stop)" in text
    assert "done, hidden 2/6, 25.0 s" in text


def test_summary_table_has_one_line_per_run() -> None:
    rows = [{"fixture": "todo_repo", "preset": "part2", "ctx": "4096", "rep": "1", "stop_reason": "done",
             "hidden_passed": "2", "hidden_total": "6"}]  # fmt: skip
    table = summary_table(rows).splitlines()
    assert len(table) == 2 and "2/6" in table[1] and table[0].split()[0] == "fixture"
