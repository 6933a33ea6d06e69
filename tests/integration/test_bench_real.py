"""The bench with the real llama-server (embedded, CPU) and local sandboxes: a server killed mid-run, and a bench
killed between runs and resumed. Each on the suite's small task (tests/small_task.py): what is checked here is the
bench's handling of faults, nothing of todo_repo's grading, and calc's grading is one pytest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from small_task import NAME, SETTINGS
from small_task import ROOT as TASKS

from bench.config import BenchConfig
from bench.results.append import read_rows
from bench.run.progress import Progress
from bench.run.runner import Bench

pytestmark = [pytest.mark.llama, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def small_bench(tmp_path: Path, **changes: Any) -> BenchConfig:
    """One step per run: Flint dies at the agent's start, and the run after it needs only to reach the server."""
    settings: dict[str, Any] = {
        "servers": "embedded",
        "sandbox": "local",
        **SETTINGS,
        "presets": ["part3"],
        "ctx": [1024],
        "max_steps": 1,
        "jeff_ctx": 512,
        "out": str(tmp_path / "results.csv"),
        "agent_retries": 1,
        "agent_retry_delay_s": 0.1,
    }
    settings.update(changes)
    return BenchConfig(**settings)


def test_flint_killed_mid_run_is_recorded_and_the_next_run_gets_fresh_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = Bench(small_bench(tmp_path, reps=2), checkout=ROOT)
    killed: list[int] = []
    original = Progress.on_event

    def kill_flint_when_the_first_agent_starts(self: Progress, event: dict[str, Any]) -> None:
        original(self, event)
        if event["event"] == "start" and not killed:
            pid = int(os.environ["AGENTBENCH_TEST_FLINT_PID"])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    real_start = bench.factory.make_servers

    def servers_that_publish_flint_pid(log_dir: Path, fixtures: Any) -> Any:
        servers = real_start(log_dir, fixtures)
        start = servers.start

        def start_and_publish(ctx: int, jeff_ctx: int | None = None) -> Any:
            endpoints = start(ctx, jeff_ctx)
            os.environ["AGENTBENCH_TEST_FLINT_PID"] = str(endpoints.server_pids["flint"])
            return endpoints

        servers.start = start_and_publish  # type: ignore[method-assign]
        return servers

    monkeypatch.setattr(Progress, "on_event", kill_flint_when_the_first_agent_starts)
    monkeypatch.setattr(bench.factory, "make_servers", servers_that_publish_flint_pid)
    first, second = bench.run()
    assert killed
    assert first["stop_reason"] == "infra_error" and "died during the run" in first["error"]
    assert "infrastructure" in first["failure_labels"]
    assert second["stop_reason"] in ("done", "step_limit", "context_exhausted")
    assert second["error"] == "" and second["prompt_tokens_reprocessed"] == second["prompt_tokens_metrics"]


def test_a_bench_stopped_between_runs_keeps_its_rows_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--servers",
        "embedded",
        "--sandbox",
        "local",
        "--ctx",
        "1024",
        "--presets",
        "part3",
        "--fixtures",
        NAME,
        "--fixtures-root",
        str(TASKS),
        "--max-steps",
        "1",
        "--reps",
        "2",
        "--out",
        str(out),
    ]
    bench = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and bench.poll() is None and len(read_rows(out)) < 1:
        time.sleep(0.5)
    assert len(read_rows(out)) == 1, "the first run never finished"
    bench.send_signal(signal.SIGTERM)
    output, _ = bench.communicate(timeout=120)
    assert bench.returncode == 143, output  # SIGTERM: 128 + 15
    assert "rows already written are kept" in output
    first = read_rows(out)
    assert len(first) == 1

    resumed = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rows = read_rows(out)
    assert rows[0] == first[0]
    assert sorted(r["rep"] for r in rows) == ["1", "2"]
    assert "already in results.csv: skipped (--resume)" in resumed.stdout


@pytest.mark.docker
def test_a_bench_killed_mid_run_is_cleaned_up_by_the_next_which_resumes(tmp_path: Path, bench_state_dir: Path) -> None:
    """SIGKILL while the second run's docker sandbox runs: the servers, the sandbox container, the networks and the
    temp folder outlive the bench; the next bench (--resume) removes exactly those, keeps the first row, runs the
    second run again, and its servers write logs of their own."""
    from bench.containers.engine import docker_client
    from bench.containers.names import OWNER_LABEL
    from bench.ownership import Ownership
    from bench.processes import is_running

    client = docker_client()
    out = tmp_path / "results.csv"
    config = tmp_path / "bench.yaml"
    config.write_text("jeff_ctx: 512\nagent_retries: 1\nagent_retry_delay_s: 0.1\n")
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--config",
        str(config),
        "--servers",
        "embedded",
        "--sandbox",
        "docker",
        "--ctx",
        "1024",
        "--presets",
        "part3",
        "--fixtures",
        NAME,
        "--fixtures-root",
        str(TASKS),
        "--max-steps",
        "1",
        "--reps",
        "2",
        "--out",
        str(out),
    ]
    bench = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, record = time.monotonic() + 600, None
    while time.monotonic() < deadline and bench.poll() is None:
        states = list(bench_state_dir.glob("*.json"))
        record = Ownership.load(states[0]) if states else None
        if record and read_rows(out) and sandbox_running(client, record):
            break
        time.sleep(0.5)
    assert record is not None and bench.poll() is None, "the bench never started its second run"
    bench.kill()
    bench.wait()
    owned = {"label": f"{OWNER_LABEL}={record.instance}"}
    (first,) = read_rows(out)
    servers = [p for p in record.processes if is_running(p.pid, p.start_time)]
    assert {p.what for p in servers} == {"flint", "jeff"}  # orphans, as a killed bench leaves them
    assert client.containers.list(all=True, filters=owned) and all(Path(f).is_dir() for f in record.folders)
    firewalled = os.geteuid() == 0 and shutil.which("iptables")  # the bench adds its rule where it can
    assert (f"ab{record.instance}+" in firewall_rules()) == bool(firewalled)

    resumed = subprocess.run([*cmd, "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=900)

    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"bench {record.instance} (pid {bench.pid}" in resumed.stderr  # diagnostics: logged on stderr
    assert "ended without cleaning up; removed: flint (pid" in resumed.stderr
    assert not any(is_running(p.pid, p.start_time) for p in servers)
    assert client.containers.list(all=True, filters=owned) == [] and client.networks.list(filters=owned) == []
    assert client.volumes.list(filters=owned) == [] and not any(Path(f).exists() for f in record.folders)
    assert list(bench_state_dir.glob("*.json")) == []  # the second bench removed its own record too
    assert f"ab{record.instance}+" not in firewall_rules()
    rows = read_rows(out)
    assert rows[0] == first and [r["rep"] for r in rows] == ["1", "2"] and rows[1]["error"] == "", rows
    assert "already in results.csv: skipped (--resume)" in resumed.stdout
    logs = sorted(p.relative_to(out.parent / "runs" / "servers") for p in (out.parent / "runs").rglob("*-1.log"))
    assert len({log.parts[0] for log in logs}) == 2  # each instance's servers wrote logs of their own


def sandbox_running(client: Any, record: Any) -> bool:
    """The bench has both servers up and a run's sandbox container running (the repository's holder outlives runs)."""
    from bench.containers.names import OWNER_LABEL

    owned = {"label": f"{OWNER_LABEL}={record.instance}"}
    sandboxes = [c for c in client.containers.list(filters=owned) if c.labels.get("agentbench.role") == "sandbox"]
    return {p.what for p in record.processes} >= {"flint", "jeff"} and bool(sandboxes)


def firewall_rules() -> str:
    """This host's INPUT rules where the bench may add them (root with iptables), else ""."""
    if os.geteuid() != 0 or not shutil.which("iptables"):
        return ""
    return subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True, check=True).stdout
