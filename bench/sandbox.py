"""Where the agent runs: a throwaway Docker container, or a temp dir and a subprocess where no engine runs.

Either way the agent works on a fresh copy of the fixture (made by the runner) and never sees the hidden tests:
they live outside that copy and only meet the agent's changes later, in a separate grading sandbox.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import PrerequisiteError, SandboxError
from bench.forwarder import LABEL, remove_container
from bench.processes import run_to_end
from bench.score import Grader, LocalGrader, PytestRun
from bench.servers import Endpoints

SANDBOX_UID = 10001  # the `agent` user of docker/sandbox.Dockerfile


@dataclass
class AgentRun:
    exit_code: int | None  # None when the process was killed or never started
    timed_out: bool
    wall_s: float
    output: str  # the agent's stdout and stderr
    infra_error: str | None = None  # the sandbox itself failed (container did not start, ...)


class Sandbox(Protocol):
    kind: str

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent_args: list[str]
    ) -> AgentRun: ...

    def grader(self) -> Grader: ...


def docker_client() -> Any:
    """A client for the local engine, or PrerequisiteError saying how to get one."""
    try:
        import docker

        client = docker.from_env(timeout=60)
        client.ping()
        return client
    except Exception as e:
        raise PrerequisiteError(
            f"no Docker engine answers ({type(e).__name__}); start dockerd or use --sandbox local"
        ) from e


def docker_available() -> bool:
    try:
        docker_client().close()
        return True
    except PrerequisiteError:
        return False


class LocalSandbox:
    """A temp dir and a subprocess: for machines without Docker. The agent's commands run as this user, here."""

    kind = "local"

    def __init__(self, endpoints: Endpoints, timeout_s: float) -> None:
        self.endpoints = endpoints
        self.timeout_s = timeout_s

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent_args: list[str]
    ) -> AgentRun:
        for name in visible_tests:  # the agent refuses to write them; the mode is a second line of defence
            (workdir / name).chmod(0o444)
        jeff = ["--jeff", self.endpoints.jeff_url] if self.endpoints.jeff_url else ["--no-jeff"]
        cmd = [sys.executable, "-m", "agent", "--repo", str(workdir), "--task-file", str(workdir / task_file)]
        cmd += ["--events", str(out_dir / "events.jsonl"), "--flint", self.endpoints.flint_url, *jeff, *agent_args]
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
        start = time.monotonic()
        code, timed_out, output = run_to_end(cmd, cwd=workdir, env=env, timeout_s=self.timeout_s)
        return AgentRun(code, timed_out, time.monotonic() - start, output)

    def grader(self) -> Grader:
        return LocalGrader()


def _owner_for_container(*folders: Path) -> str:
    """The uid:gid the container runs as; as root, hand the folders to the sandbox's unprivileged user."""
    if os.geteuid() != 0:
        return f"{os.getuid()}:{os.getgid()}"
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            os.lchown(path, SANDBOX_UID, SANDBOX_UID)
    return f"{SANDBOX_UID}:{SANDBOX_UID}"


def _run_container(client: Any, timeout_s: float, **kwargs: Any) -> tuple[int | None, bool, str]:
    """Run a container to completion (or kill it at the timeout); returns (exit code, timed out, logs)."""
    import docker.errors
    import requests.exceptions

    try:
        container = client.containers.run(detach=True, **kwargs)
    except docker.errors.DockerException as e:
        raise SandboxError(f"the sandbox container did not start: {str(e)[:300]}") from e
    try:
        try:
            status = container.wait(timeout=timeout_s)
            code, timed_out = int(status.get("StatusCode", -1)), False
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            container.kill()
            code, timed_out = None, True
        return code, timed_out, container.logs().decode(errors="replace")
    finally:
        remove_container(client, container.id)


class DockerSandbox:
    """One throwaway container per run, on a network that reaches only Flint and Jeff."""

    kind = "docker"

    def __init__(self, client: Any, image: str, endpoints: Endpoints, config: BenchConfig, run_label: str) -> None:
        if not endpoints.sandbox_network or not endpoints.flint_sandbox_url:
            raise SandboxError("these servers are not reachable from containers; use --sandbox local")
        self.client = client
        self.image = image
        self.endpoints = endpoints
        self.config = config
        self.run_label = run_label

    def _limits(self) -> dict[str, Any]:
        return {
            "mem_limit": self.config.sandbox_memory,
            "nano_cpus": int(self.config.sandbox_cpus * 1e9),
            "pids_limit": self.config.sandbox_pids,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "read_only": True,  # only the repo copy, the trace folder and /tmp are writable
            "tmpfs": {"/tmp": "size=256m"},
            "environment": {"HOME": "/tmp"},
        }

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent_args: list[str]
    ) -> AgentRun:
        jeff_url = self.endpoints.jeff_sandbox_url
        jeff = ["--jeff", jeff_url] if jeff_url else ["--no-jeff"]
        flint = ["--flint", str(self.endpoints.flint_sandbox_url)]
        command = ["python3", "-m", "agent", "--repo", "/repo", "--task-file", f"/repo/{task_file}"]
        command += ["--events", "/out/events.jsonl", *flint, *jeff, *agent_args]
        volumes = {str(workdir): {"bind": "/repo", "mode": "rw"}, str(out_dir): {"bind": "/out", "mode": "rw"}}
        for name in visible_tests:  # mounted read-only over the copy: not writable, not removable
            volumes[str(workdir / name)] = {"bind": f"/repo/{name}", "mode": "ro"}
        start = time.monotonic()
        try:
            code, timed_out, logs = _run_container(
                self.client, self.config.run_timeout_s, image=self.image, command=command, volumes=volumes,
                user=_owner_for_container(workdir, out_dir), working_dir="/repo",
                network=self.endpoints.sandbox_network, labels={LABEL: "sandbox", "agentbench.run": self.run_label},
                **self._limits(),
            )  # fmt: skip
        except SandboxError as e:
            return AgentRun(None, False, time.monotonic() - start, "", infra_error=str(e))
        return AgentRun(code, timed_out, time.monotonic() - start, logs)

    def grader(self) -> Grader:
        return DockerGrader(self.client, self.image)


class DockerGrader:
    """Runs pytest for grading in a fresh container with no network at all."""

    def __init__(self, client: Any, image: str) -> None:
        self.client = client
        self.image = image

    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float) -> PytestRun:
        code, timed_out, logs = _run_container(
            self.client, timeout_s, image=self.image, command=["python3", "-I", "-B", "-m", "pytest", *args],
            volumes={str(workdir): {"bind": "/grade", "mode": "rw"}}, working_dir="/grade",
            user=_owner_for_container(workdir), network_mode="none", labels={LABEL: "grader"},
            environment={"HOME": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, mem_limit="2g", pids_limit=256,
        )  # fmt: skip
        return PytestRun(exit_code=code, output=logs, timed_out=timed_out)
