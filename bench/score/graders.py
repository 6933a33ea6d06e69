"""Where grading pytest runs: a fresh container with no network (docker), or a subprocess here (local)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.containers.engine import LABEL, choose_sandbox, docker_client, owner_for_container, run_container
from bench.processes import run_to_end


class DockerGrader:
    """Runs pytest for grading in a fresh container with no network at all."""

    def __init__(self, client: Any, image: str) -> None:
        self.client = client
        self.image = image

    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float) -> PytestRun:
        code, timed_out, logs = run_container(
            self.client, timeout_s, image=self.image, command=["python3", "-I", "-B", "-m", "pytest", *args],
            volumes={str(workdir): {"bind": "/grade", "mode": "rw"}}, working_dir="/grade",
            user=owner_for_container(workdir), network_mode="none", labels={LABEL: "grader"},
            environment={"HOME": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, mem_limit="2g", pids_limit=256,
        )  # fmt: skip
        return PytestRun(exit_code=code, output=logs, timed_out=timed_out)


@dataclass(frozen=True)
class PytestRun:
    exit_code: int | None
    output: str
    timed_out: bool


class Grader(Protocol):
    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float) -> PytestRun: ...


class LocalGrader:
    """pytest in a subprocess on this machine. It shuts out planted configuration, not hostile code: use Docker."""

    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float) -> PytestRun:
        # -I: no PYTHON* variables, no user site, and the copy stays off sys.path at start-up. Since -I also
        # ignores PYTHONDONTWRITEBYTECODE, -B is what keeps .pyc files out of the copy.
        command = [sys.executable, "-I", "-B", "-m", "pytest", *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
        env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
        code, timed_out, output = run_to_end(command, cwd=workdir, env=env, timeout_s=timeout_s)
        return PytestRun(exit_code=code, output=output, timed_out=timed_out)


def make_grader(requested: str) -> Grader:
    """A grader as strong as the sandbox: docker (a fresh container, no network) or local; `auto` as bench run."""
    if choose_sandbox(requested).kind == "docker":
        from bench.containers.images import ensure_sandbox_image  # Docker modules load only when Docker is used

        client = docker_client()
        return DockerGrader(client, ensure_sandbox_image(client))
    return LocalGrader()
