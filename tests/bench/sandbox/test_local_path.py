"""The local sandbox runs the model's commands with the bench's own pytest and python first on PATH, as the sandbox
image does (bench/sandbox/local.py agent_environment): a shell started with the agent's environment finds them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.sandbox.local import agent_environment

pytestmark = pytest.mark.usefixtures("child_processes")
OWN = Path(sys.executable).parent


def found(command: str, env: dict[str, str]) -> str:
    done = subprocess.run(["sh", "-c", f"command -v {command}"], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_models_pytest_and_python_are_the_benchs_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    other = tmp_path / "other-env" / "bin"  # a user's PATH whose first pytest and python are another environment's
    other.mkdir(parents=True)
    for name in ("pytest", "python"):
        (other / name).write_text("#!/bin/sh\nexit 3\n")
        (other / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{other}:/usr/bin:/bin")
    env = agent_environment({"AGENT_VARIABLE": "1"})
    assert found("pytest", env) == str(OWN / "pytest") and found("python", env) == str(OWN / "python")
    assert env["PATH"].endswith(f"{other}:/usr/bin:/bin") and env["AGENT_VARIABLE"] == "1"  # the rest kept after
    assert agent_environment({"PATH": "/opt/agent/bin"})["PATH"] == "/opt/agent/bin"  # an agent's own PATH wins
