"""Bench settings for the tests that run the real runner against a scripted Flint (bench.testing.fake_llama) as an
external server, in local sandboxes: one part2 run of todo_repo at 4,096 tokens, unless a test changes it."""

from __future__ import annotations

from pathlib import Path

from bench.config import BenchConfig
from bench.testing import fake_llama


def fake_flint_config(tmp_path: Path, flint: fake_llama.FakeLlama, **changes: object) -> BenchConfig:
    settings: dict[str, object] = {
        "servers": "external",
        "sandbox": "local",
        "flint_url": flint.url,
        "use_jeff": False,
        "fixtures": ["todo_repo"],
        "presets": ["part2"],
        "ctx": [4096],
        "max_steps": 4,
        "out": str(tmp_path / "results.csv"),
        "agent_retries": 1,
        "agent_retry_delay_s": 0.05,
    }
    return BenchConfig(**(settings | changes))  # type: ignore[arg-type]
