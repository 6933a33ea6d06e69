"""Two benches on one host at once, each a real `python -m bench run` with docker sandboxes against a scripted
Flint of its own: both finish with correct rows, neither removes the other's containers, and each leaves nothing
behind. Two benches given the same --out: the second is refused before it runs anything. The task is the suite's
small one (tests/small_task.py): each run is graded, and calc's grading is one pytest."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from small_task import NAME, UNTOUCHED
from small_task import ROOT as TASKS

from bench.containers.engine import docker_client
from bench.containers.names import OWNER_LABEL
from bench.results.append import read_rows
from bench.results.lock import ResultsLock
from bench.testing import fake_llama
from bench.testing.host_targets import default_bridge_address

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]


def bench_command(out: Path, flint_url: str, config: Path, *, sandbox: str = "docker") -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--config",
        str(config),
        "--sandbox",
        sandbox,
        "--servers",
        "external",
        "--flint-url",
        flint_url,
        "--fixtures",
        NAME,
        "--fixtures-root",
        str(TASKS),
        "--presets",
        "part2",
        "--ctx",
        "4096",
        "--max-steps",
        "1",
        "--reps",
        "2",
        "--out",
        str(out),
    ]


def small_config(tmp_path: Path) -> Path:
    config = tmp_path / "bench.yaml"
    config.write_text("use_jeff: false\nagent_retries: 1\nagent_retry_delay_s: 0.1\n")
    return config


@pytest.mark.docker
@pytest.mark.slow
def test_two_benches_on_one_host_both_finish_with_their_own_rows(tmp_path: Path) -> None:
    client = docker_client()
    gateway = default_bridge_address(client)  # the forwarders of both benches reach it
    config = small_config(tmp_path)
    with (
        fake_llama.FakeLlama(host=gateway, default=fake_llama.prose("First bench: done.")) as first,
        fake_llama.FakeLlama(host=gateway, default=fake_llama.prose("Second bench: done.")) as second,
    ):
        outs = [tmp_path / "a" / "results.csv", tmp_path / "b" / "results.csv"]
        started = time.monotonic()
        benches = [
            subprocess.Popen(
                bench_command(out, fake.url, config),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for out, fake in zip(outs, (first, second), strict=True)
        ]
        walls = []
        outputs = []
        for bench in benches:
            output, _ = bench.communicate(timeout=900)
            walls.append(time.monotonic() - started)
            outputs.append(output)
            assert bench.returncode == 0, output[-3000:]
        print(f"two benches of 2 docker runs each: finished after {walls[0]:.0f} s and {walls[1]:.0f} s")
    for out, fake, output in zip(outs, (first, second), outputs, strict=True):
        rows = read_rows(out)
        assert [r["rep"] for r in rows] == ["1", "2"], output[-3000:]
        for row in rows:
            assert row["sandbox"] == "docker" and row["stop_reason"] == "done", row["error"]
            assert (
                row["error"] == "" and (row["hidden_passed"], row["hidden_total"], row["visible_passed"]) == UNTOUCHED
            )
            assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"]
        assert len([r for r in fake.requests if r.get("messages")]) == 2  # one step per run, each at its own Flint
        assert "ended without cleaning up" not in output  # neither took the other for dead
    instances = [re.search(r"bench: instance (\w+)", output).group(1) for output in outputs]  # type: ignore[union-attr]
    assert instances[0] != instances[1]
    for instance in instances:
        owned = {"label": f"{OWNER_LABEL}={instance}"}
        assert client.containers.list(all=True, filters=owned) == []
        assert client.networks.list(filters=owned) == [] and client.volumes.list(filters=owned) == []
        assert f"ab{instance}+" not in firewall_rules()  # each bench's rule went with it


def firewall_rules() -> str:
    """This host's INPUT rules, where the bench may add them (root with iptables); "" elsewhere."""
    if os.geteuid() != 0 or not shutil.which("iptables"):
        return ""
    return subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True, check=True).stdout


def test_a_second_bench_on_the_same_out_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    holder = ResultsLock(out)  # what a first bench holds for its whole life
    holder.acquire()
    with fake_llama.FakeLlama() as flint:
        second = subprocess.run(
            bench_command(out, flint.url, small_config(tmp_path), sandbox="local"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert flint.requests == []
    holder.release()
    assert second.returncode != 0
    errors = second.stderr.strip().splitlines()
    assert len(errors) == 1 and "another bench (pid" in errors[0] and "another --out" in errors[0], second.stderr
    assert not out.exists() and not (tmp_path / "runs").exists()
