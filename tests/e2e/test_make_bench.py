"""`make bench` end to end: the embedded CPU llama-server and the small model, one run in a docker sandbox and one in a
local sandbox, each leaving a complete results row and its artifacts. Flint is the small model forced to call tools
(flint_tools auto), so each of the two steps is a short tool call, not pages of prose. The docker run benches the
default task, todo_repo; the local one the suite's small task (tests/small_task.py) through FIXTURES_ROOT, whose
grading is one pytest where todo_repo's starts its program about a hundred times."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import small_task

from bench.results.append import read_rows
from bench.results.schema import COLUMNS

pytestmark = [pytest.mark.llama, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ("events.jsonl", "agent.log", "diff.patch", "junit.xml", "run.json", "score.json", "server.log")
ALWAYS_MEASURED = (
    "run_id",
    "started_at",
    "git_sha",
    "fixture",
    "preset",
    "ctx",
    "rep",
    "sandbox",
    "servers",
    "flint_model",
    "jeff_model",
    "server_build",
    "stop_reason",
    "steps",
    "wall_s",
    "model_s",
    "harness_s",
    "prompt_tokens",
    "prompt_tokens_reprocessed",
    "cache_tokens",
    "completion_tokens",
    "max_request_tokens",
    "clearings",
    "cut_answers",
    "context_400s",
    "gpu_mem_method",
    "hidden_passed",
    "hidden_total",
    "visible_passed",
    "files_changed",
    "tests_added",
    "agent_version",
    "fixture_sha",
    "flint_model_sha256",
    "prompt_tokens_metrics",
    "tools_s",
)


# (FIXTURES, FIXTURES_ROOT, hidden_total, visible_passed of the task's untouched code)
TASKS = {"todo_repo": ("todo_repo", "", "6", "3"), "calc": (small_task.NAME, str(small_task.ROOT), "3", "1")}


def make_bench(tmp_path: Path, sandbox: str, task: str) -> dict[str, str]:
    out = tmp_path / sandbox / "results.csv"
    fixture, root, hidden_total, visible_passed = TASKS[task]
    args = [
        "make",
        "bench",
        "CTX=2048",
        "REPS=1",
        f"FIXTURES={fixture}",
        "PRESETS=part3",
        "MAX_STEPS=2",
        f"SANDBOX={sandbox}",
        "SERVERS=embedded",
        f"OUT={out}",
    ]
    args += [f"FIXTURES_ROOT={root}"] if root else []
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=1500, env=dict(os.environ))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (row,) = read_rows(out)
    assert list(row) == COLUMNS
    for column in ALWAYS_MEASURED:
        assert row[column] != "", f"{column} is empty: {row['error']}"
    assert row["sandbox"] == sandbox and row["servers"] == "embedded" and row["ctx"] == "2048"
    assert row["flint_serving"] == "forced_tools" and row["stop_reason"] == "step_limit", row["error"]
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"]
    assert 0 <= float(row["tools_s"]) <= float(row["harness_s"])  # the tools' time is part of the harness's
    assert (row["fixture"], row["hidden_total"], row["visible_passed"]) == (fixture, hidden_total, visible_passed)
    assert row["error"] == ""
    if row["peak_gpu_mib_device"] == "":
        assert row["gpu_mem_method"].startswith("unavailable")
    run_dir = out.parent / "runs" / row["run_id"]
    for name in ARTIFACTS:
        assert (run_dir / name).is_file(), name
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "start" and events[0]["n_ctx"] == 2048
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == row["stop_reason"]
    tools = [e for e in events if e["event"] == "tool"]
    assert len(tools) == 2 and all(t["result_chars"] > 0 for t in tools)  # a real call, a real result, each step
    return row


@pytest.mark.docker
def test_make_bench_in_docker_sandboxes(tmp_path: Path) -> None:
    make_bench(tmp_path, "docker", "todo_repo")


def test_make_bench_in_local_sandboxes(tmp_path: Path) -> None:
    make_bench(tmp_path, "local", "calc")
