"""aider, end to end against the real llama-server (embedded, CPU, Qwen2.5-Coder-0.5B) in the local sandbox, behind
the recording proxy: installed from PyPI (pinned), one headless turn. Its row has the article's figures (requests,
reprocessed tokens equal to Flint's /metrics delta, the hidden tests' grading) and the other agents' own: streamed
answers captured from the stream, its first prompt, its requests by thread, and the reprocessed tokens split by cause
from the proxy's log, adding up. What is checked is the measuring, not the agent's skill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.measure.reprocessing import CAUSES
from bench.run.runner import Bench

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def test_aider_gets_the_articles_row_and_its_requests_figures(tmp_path: Path) -> None:
    config = BenchConfig(
        servers="embedded",
        sandbox="local",
        **SETTINGS,
        agents=["aider"],
        cpu_model="qwen2.5-coder-0.5b",  # a model that answers in aider's edit format (SmolLM2 is forced to tools)
        ctx=[4096],
        use_jeff=False,
        out=str(tmp_path / "results.csv"),
    )
    (row,) = Bench(config, checkout=ROOT).run()
    assert (row["agent"], row["agent_version"], row["api_dialect"]) == ("aider", "0.86.2", "chat-completions")
    assert row["stop_reason"] in ("done", "step_limit"), row["error"]
    assert row["reprocessed_check"] == "ok" and row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] != ""
    assert row["streamed"] == "yes"  # aider streams: its usage and timings came from the stream's last chunks
    assert int(row["requests_main"]) == int(row["steps"]) - int(row["requests_side"]) - int(row["requests_subagent"])
    assert int(row["first_prompt_tokens"]) > 500  # its system prompt, repository map and the task
    assert row["reprocessed_split"] in ("ok", "mismatch"), row["error"]
    columns = [
        f"reprocessed_{c}" if c in ("cold", "new", "answer", "unexplained") else f"reprocessed_by_{c}" for c in CAUSES
    ]
    assert sum(int(row[column]) for column in columns) == int(row["prompt_tokens_reprocessed"])
    assert row["hidden_total"] != ""  # graded by the hidden tests, as any run
    run_dir = next(tmp_path.glob("**/runs/*aider*"))
    logged = [json.loads(line) for line in (run_dir / "proxy.jsonl").read_text().splitlines()]
    assert all(entry["route"] != "GET /metrics" for entry in logged)
