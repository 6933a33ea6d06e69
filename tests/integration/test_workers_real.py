"""Two workers with the real llama-server (embedded, CPU, the small model) and local sandboxes: each worker its own
pair of servers and instance, the plan's runs once each, into one file. On the suite's small task (tests/small_task.py):
nothing of todo_repo's grading is read here."""

from __future__ import annotations

from pathlib import Path

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.results.append import read_rows
from bench.run.free_cores import CoreLoad
from bench.run.runner import Bench

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def test_two_cpu_pairs_share_the_plan_and_write_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # both pairs start however busy this host is: whether a second one should is tests/bench/run/test_free_cores.py's
    monkeypatch.setattr(CoreLoad, "read", classmethod(lambda cls: CoreLoad(2, 0.0)))
    config = BenchConfig(
        servers="embedded",
        sandbox="local",
        **SETTINGS,
        presets=["part3"],
        ctx=[1024],
        reps=2,
        max_steps=1,
        jeff_ctx=512,
        use_jeff=False,
        out=str(tmp_path / "results.csv"),
        workers=2,
        agent_retries=1,
        agent_retry_delay_s=0.1,
    )
    bench = Bench(config, checkout=ROOT)
    assert len(bench.factories) == 2 and bench.factories[0].names != bench.factories[1].names
    rows = bench.run()
    assert sorted(row["rep"] for row in rows) == ["1", "2"] and read_rows(tmp_path / "results.csv") == rows
    assert all(row["stop_reason"] != "infra_error" and row["servers"] == "embedded" for row in rows), rows
    logs = sorted((tmp_path / "runs" / "servers").iterdir())
    assert len(logs) == 2 and all(any(folder.iterdir()) for folder in logs), logs  # both pairs started and logged
