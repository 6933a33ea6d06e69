"""The window from /props must be a positive whole number, and a huge file in the repository costs no memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import ROOT, read_events

from agent.cli import main
from bench.testing.fake_llama import FakeLlama


@pytest.mark.usefixtures("child_processes")  # the start asks the interpreter for its own path (agent/check_python.py)
@pytest.mark.parametrize("n_ctx", [0, -5, True, "4096", 4096.0, None, [4096]])
def test_a_window_that_is_no_positive_whole_number_is_a_setup_error(
    repo: Path, n_ctx: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeLlama() as flint:
        flint.n_ctx = n_ctx
        events = repo.parent / "events.jsonl"
        code = main(["--repo", str(repo), "--task", "t", "--flint", flint.url, "--events", str(events), "--no-jeff"])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1 and "n_ctx" in error and json.dumps(n_ctx) in error
    stop = read_events(events)[-1]
    assert stop["reason"] == "server_error" and "not a positive whole number" in stop["message"]
    assert flint.requests == []  # no step was taken


# Takes the start snapshot of the repository given, in a fresh process, and prints its peak resident memory (KiB).
# VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over an exec, so it would count the forking test process.
SNAPSHOT_PEAK = """
import sys
from pathlib import Path
from agent.done import take_snapshot
snapshot = take_snapshot(Path(sys.argv[1]))
status = Path("/proc/self/status").read_text()
peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
print(len(snapshot.files), peak)
"""


def snapshot_peak_kib(repo: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT_PEAK, str(repo)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    files, peak = done.stdout.split()
    assert int(files) >= 3
    return int(peak)


@pytest.mark.usefixtures("child_processes")
def test_the_start_snapshot_reads_a_100_mb_file_in_pieces(repo: Path) -> None:
    small = snapshot_peak_kib(repo)
    with open(repo / "data.bin", "wb") as f:  # sparse: 100 MB to read, no disk used
        f.truncate(100 * 1024 * 1024)
    big = snapshot_peak_kib(repo)
    print(f"peak RSS of the start snapshot: {small} KiB, with a 100 MB file {big} KiB")
    assert big < 60 * 1024 and big - small < 8 * 1024  # reading it whole took the agent to 217 MB
