"""Agents other than the article's, end to end against the real llama-server (embedded, CPU, Qwen2.5-Coder-0.5B):
mini-swe-agent installed from PyPI (pinned), in the local sandbox and in the docker sandbox, each behind the recording
proxy. Its row has the article's figures: its requests, the reprocessed tokens equal to Flint's /metrics delta, the
hidden tests' grading. What is checked is the measuring, not the agent's skill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.run.runner import Bench

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def agent_bench(tmp_path: Path, sandbox: str) -> BenchConfig:
    settings: dict[str, Any] = {
        "servers": "embedded",
        "sandbox": sandbox,
        **SETTINGS,
        "agents": ["mini-swe-agent"],
        # a model that writes its own tool calls (the fenced serving): SmolLM2 is forced to the article's tools, and
        # every answer to mini-swe-agent's own tool was a 500 ("does not match the expected peg-native format")
        "cpu_model": "qwen2.5-coder-0.5b",
        "ctx": [2048],
        "max_steps": 3,
        "use_jeff": False,
        "out": str(tmp_path / "results.csv"),
    }
    return BenchConfig(**settings)


@pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_mini_swe_agent_gets_the_articles_row(tmp_path: Path, sandbox: str) -> None:
    (row,) = Bench(agent_bench(tmp_path, sandbox), checkout=ROOT).run()
    assert (row["agent"], row["agent_version"], row["preset"]) == ("mini-swe-agent", "2.4.6", "")
    assert row["stop_reason"] in ("done", "step_limit", "context_exhausted"), row["error"]
    # at 2K the 0.5B's mini-swe-agent may outgrow the window: the server's context 400 is then the run's end
    assert row["stop_reason"] != "context_exhausted" or int(row["context_400s"]) >= 1, row
    assert int(row["steps"]) >= 1 and row["reprocessed_check"] == "ok", row["error"]
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] != ""
    assert row["hidden_total"] != ""  # graded by the hidden tests, as any run
    # its requests, from the proxy's log: not streamed, one thread, and the reprocessed tokens split by cause
    assert (row["streamed"], row["requests_side"], row["requests_subagent"]) == ("no", "0", "0")
    assert row["reprocessed_split"] in ("ok", "mismatch") and int(row["reprocessed_cold"]) > 0, row["error"]
    run_dir = next(tmp_path.glob("**/runs/*mini-swe-agent*"))
    assert (run_dir / "proxy.jsonl").exists() and (run_dir / "events.jsonl").exists()
