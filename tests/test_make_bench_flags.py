"""`make bench`'s variables reach `bench run` as its flags (make -n: the command is printed, nothing runs)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_workers_gpu_devices_and_fixtures_root_become_flags() -> None:
    variables = ["WORKERS=2", "GPU_DEVICES=0,1", "FIXTURES_ROOT=/tmp/my-tasks"]
    printed = subprocess.run(["make", "-n", "bench", *variables], cwd=ROOT, capture_output=True, text=True, check=True)
    command = " ".join(printed.stdout.replace("\\\n", " ").split())
    assert "-m bench run" in command
    assert "--workers 2" in command and "--gpu-devices 0,1" in command and "--fixtures-root /tmp/my-tasks" in command
    unset = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--workers" not in unset and "--gpu-devices" not in unset and "--fixtures-root" not in unset
