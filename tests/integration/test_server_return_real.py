"""A real llama-server as an external Flint that goes down for 3 s in run 2 of 4 (killed, then started again on its
port, as a supervisor or the kubelet restarts a crashed server): the bench waits for it (server_wait_s) and runs 2
again, and runs 3 and 4 run normally once it is back, none of them infra_error. The smallest setup that shows it:
the small model on the CPU, one step of at most 8 tokens per run (part2 takes a cut answer as the answer), no
Jeff, the suite's small task (tests/small_task.py: nothing of todo_repo's grading is read here).

Two runs after the outage show that the bench goes on as before (more of them would show nothing new); 3 s down
is longer than the first polls of /health (0.5 s, then 1 and 2 s more: bench/run/server_return.py), so the bench
meets refused connections several times before the server answers again."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.llama.binaries import find_small_model
from bench.llama.process import LlamaProcess, free_port
from bench.run.runner import Bench

pytestmark = [pytest.mark.llama, pytest.mark.slow]
CTX, RUNS, DOWN_S = 2048, 4, 3.0


def flint(port: int, log: Path) -> LlamaProcess:
    server = LlamaProcess(find_small_model(), CTX, log, port=port, threads=1, who="flint")
    server.start()
    return server


def test_flint_down_3_s_in_run_2_of_4_costs_only_run_2_which_runs_again(tmp_path: Path) -> None:
    port = free_port()
    servers = [flint(port, tmp_path / "flint-1.log")]
    back_at: list[float] = []

    def outage_in_run_2() -> None:
        runs = tmp_path / "runs"
        while len([p for p in runs.glob("*") if p.name != "servers"] if runs.is_dir() else []) < 2:
            time.sleep(0.05)
        process = servers[0].proc
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)  # a crash, in the middle of run 2
        process.wait(10)
        time.sleep(DOWN_S)
        servers.append(flint(port, tmp_path / "flint-2.log"))  # its supervisor starts it again, on its port
        back_at.append(time.time())

    outage = threading.Thread(target=outage_in_run_2)
    outage.start()
    settings = BenchConfig(
        servers="external",
        flint_url=f"http://127.0.0.1:{port}",
        use_jeff=False,
        sandbox="local",
        **SETTINGS,
        presets=["part2"],
        ctx=[CTX],
        reps=RUNS,
        max_steps=1,
        agent_retries=0,
        sampling={"temperature": 0.0, "seed": 42, "max_tokens": 8},
        out=str(tmp_path / "results.csv"),
    )
    try:
        rows = Bench(settings, checkout=ROOT).run()
    finally:
        outage.join()
        for server in servers:
            server.stop()
    assert [row["rep"] for row in rows] == [str(rep) for rep in range(1, RUNS + 1)]
    assert [row["stop_reason"] for row in rows if row["stop_reason"] == "infra_error"] == []
    second = rows[1]
    assert second["error"].startswith("re-run: ") and "Flint (" in second["error"], second["error"]
    assert len(list((tmp_path / "runs").glob("*.interrupted"))) == 1  # run 2's first attempt, kept without a row
    (back,) = back_at
    for row in rows[2:]:  # runs 3 and 4: after Flint was back, and as any run
        assert datetime.fromisoformat(row["started_at"]).timestamp() >= back - 1, row["started_at"]
        assert row["reprocessed_check"] == "ok" and "re-run" not in row["error"], row["error"]
