"""The local sandbox: a temp dir and a subprocess, for machines without Docker (the agent's commands run as you)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.agents.article import AGENT_HOME
from bench.agents.base import AgentCommand, Place
from bench.agents.install import ensure_installed, packages
from bench.config import BenchConfig
from bench.containers.names import BenchNames
from bench.errors import PrerequisiteError, SandboxError
from bench.processes import run_to_end
from bench.sandbox.base import AgentRun
from bench.sandbox.proxy_stop import ProxyStopped
from bench.sandbox.record_proxy import PROXY_LOG, RecordingProxy
from bench.servers.base import Endpoints


class LocalSandboxes:
    """The local kind: the agent as a subprocess here, talking to the servers' own URLs."""

    kind = "local"
    engine = None  # no container engine: grading runs here too

    def __init__(
        self, config: BenchConfig, names: BenchNames | None = None, *, docker: Any = None, checkout: Path
    ) -> None:
        self.timeout_s = config.run_timeout_s
        self.checkout = checkout  # this repository: the recording proxy's script
        self.endpoints: Endpoints | None = None

    def server_host(self) -> str:
        return "127.0.0.1"  # the agent runs here: servers need not listen anywhere else

    def connect(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def healthy(self) -> bool:
        return True  # the agent talks to the servers' own URLs: nothing in between to fail

    def sandbox(self, run_label: str, language: str = "python") -> LocalSandbox:  # this machine's toolchains
        if self.endpoints is None:
            raise SandboxError("the sandboxes were not connected to servers (connect() first)")
        return LocalSandbox(self.endpoints, self.timeout_s, self.checkout)

    def close(self) -> None:
        """Nothing of its own outlives a run."""


class LocalSandbox:
    """A temp dir and a subprocess: for machines without Docker. The agent's commands run as this user, here."""

    trace_owner: int | None = None  # the model's commands run as the agent's user here: they could write the trace

    def __init__(self, endpoints: Endpoints, timeout_s: float, checkout: Path) -> None:
        self.endpoints = endpoints
        self.timeout_s = timeout_s
        self.checkout = checkout

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent: AgentCommand
    ) -> AgentRun:
        for name in visible_tests:  # the agent refuses to write them; the mode is a second line of defence
            (workdir / name).chmod(0o444)
        try:
            installed = str(ensure_installed(agent.kind)) if packages(agent.kind) else ""
        except PrerequisiteError as e:  # this run cannot start; the bench goes on with the next
            return AgentRun(None, False, 0.0, "", infra_error=str(e))
        if agent.kind.own_trace:
            return self._run(
                workdir, out_dir, task_file, agent, flint_url=self.endpoints.flint_url, installed=installed
            )
        log = out_dir / PROXY_LOG  # the run's trace; the proxy keeps the step limit and says there when it is reached
        steps, timeout_s = agent.settings.max_steps, agent.settings.request_timeout_s
        with RecordingProxy(
            self.endpoints.flint_url, log, checkout=self.checkout, max_steps=steps, timeout_s=timeout_s
        ) as proxy_url:
            return self._run(
                workdir, out_dir, task_file, agent, flint_url=proxy_url, installed=installed, until=ProxyStopped(log)
            )

    def _run(
        self,
        workdir: Path,
        out_dir: Path,
        task_file: str,
        agent: AgentCommand,
        *,
        flint_url: str,
        installed: str,
        until: ProxyStopped | None = None,
    ) -> AgentRun:
        place = Place(
            python=sys.executable,
            repo=str(workdir),
            task_file=str(workdir / task_file),
            out_dir=str(out_dir),
            flint_url=flint_url,
            jeff_url=self.endpoints.jeff_url,
            installed=installed,
        )
        launch = agent.launch(place)
        env = agent_environment(launch.env)
        start = time.monotonic()
        code, timed_out, output = run_to_end(launch.argv, cwd=workdir, env=env, timeout_s=self.timeout_s, until=until)
        return AgentRun(code, timed_out, time.monotonic() - start, output)


def agent_environment(extra: dict[str, str]) -> dict[str, str]:
    """The agent's environment here: this one, with the bench's own interpreter's folder first on PATH, so that the
    model's `pytest` and `python` are the bench's (as the sandbox image's are), not whichever the user's PATH finds
    first (another environment's pytest took 0.86 s a call against 0.16 s: tools_s three times docker's)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    return {**os.environ, "PATH": path, "PYTHONPATH": str(AGENT_HOME), "PYTHONDONTWRITEBYTECODE": "1", **extra}
