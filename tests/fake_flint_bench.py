"""Bench settings for the tests that run the real runner against a scripted Flint (bench.testing.fake_llama) as an
external server, in local sandboxes: one part2 run of todo_repo at 4,096 tokens, unless a test changes it; and the
command line of a bench run of the suite's small task against it."""

from __future__ import annotations

from pathlib import Path

import small_task

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


def fake_flint_argv(
    flint: fake_llama.FakeLlama,
    out: Path,
    *more: str,
    ctx: int = 4096,
    fixture: str = small_task.NAME,
    root: Path = small_task.ROOT,
) -> list[str]:
    """`bench run`'s arguments for one part2 run at `ctx` against `flint` in a local sandbox, of the suite's small
    task (tests/small_task.py) unless `fixture` and `root` say another; `more` adds to them."""
    return [
        "run",
        "--servers",
        "external",
        "--sandbox",
        "local",
        "--flint-url",
        flint.url,
        "--fixtures",
        fixture,
        "--fixtures-root",
        str(root),
        "--presets",
        "part2",
        "--ctx",
        str(ctx),
        "--out",
        str(out),
        *more,
    ]
