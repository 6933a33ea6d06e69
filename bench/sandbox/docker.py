"""The docker sandbox: one throwaway container per run, on a network that reaches only Flint and Jeff."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.containers.engine import LABEL, owner_for_container, run_container
from bench.errors import SandboxError
from bench.sandbox.base import AgentRun
from bench.score.graders import DockerGrader, Grader
from bench.servers.base import Endpoints


class DockerSandbox:
    """One throwaway container per run, on a network that reaches only Flint and Jeff."""

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
            code, timed_out, logs = run_container(
                self.client, self.config.run_timeout_s, image=self.image, command=command, volumes=volumes,
                user=owner_for_container(workdir, out_dir), working_dir="/repo",
                network=self.endpoints.sandbox_network, labels={LABEL: "sandbox", "agentbench.run": self.run_label},
                **self._limits(),
            )  # fmt: skip
        except SandboxError as e:
            return AgentRun(None, False, time.monotonic() - start, "", infra_error=str(e))
        return AgentRun(code, timed_out, time.monotonic() - start, logs)

    def grader(self) -> Grader:
        return DockerGrader(self.client, self.image)
