"""The report's smallest window (bench/analyze/windows.py): from a ctx sweep of two agents, the smallest window at
which every run of each completed, what it cost, and the figure; no section without a sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.analyze.windows import FIGURE, smallest_window, windows_section
from bench.results.row import ResultRow

pytestmark = pytest.mark.slow  # draws a PNG (matplotlib)


def run(agent: str, ctx: int, done: bool, **values: Any) -> ResultRow:
    row = ResultRow(run_id=f"{agent}-{ctx}", agent=agent, preset="part3" if agent == "article" else "", ctx=ctx)
    row.flint_model, row.stop_reason = "qwen.gguf", "done" if done else "step_limit"
    row.hidden_passed, row.hidden_total, row.reprocessed_check = (6 if done else 2), 6, "ok"
    for name, value in values.items():
        setattr(row, name, value)
    return row


def test_each_agent_gets_its_smallest_completing_window_and_its_cost(tmp_path: Path) -> None:
    rows = [
        run("article", 2048, False, prompt_tokens_reprocessed=9000),
        run("article", 4096, True, prompt_tokens_reprocessed=5000, peak_gpu_mib_flint=900),
        run("article", 4096, True, prompt_tokens_reprocessed=7000, peak_gpu_mib_flint=1100),
        run("article", 8192, True, prompt_tokens_reprocessed=3000),
        run("aider", 4096, False, first_prompt_tokens=5200),
        run("aider", 8192, True, prompt_tokens_reprocessed=12000, first_prompt_tokens=5200),
    ]
    rows.append(run("aider", 16384, True, prompt_tokens_reprocessed=8000))
    text = "\n".join(windows_section(rows, tmp_path))
    assert "| article·part3 | qwen.gguf | 4096 | 1,000 | 6,000 |" in text  # medians of its two runs at 4096
    assert "| aider | qwen.gguf | 8192 | n/a | 12,000 |" in text  # GPU memory not measured: said, not 0
    assert "| aider | qwen.gguf | 4096 | 0 of 1 |" in text
    assert (tmp_path / FIGURE).read_bytes().startswith(b"\x89PNG")


def test_a_window_where_one_run_failed_is_not_the_smallest_and_no_sweep_no_section(tmp_path: Path) -> None:
    windows = {2048: [run("a", 2048, True), run("a", 2048, False)], 4096: [run("a", 4096, True)]}
    assert smallest_window(windows) == 4096
    assert smallest_window({2048: [run("a", 2048, False)]}) is None
    assert windows_section([run("a", 4096, True), run("b", 8192, True)], tmp_path) == []
