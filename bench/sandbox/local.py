"""The local sandbox: a temp dir and a subprocess, for machines without Docker (the agent's commands run as you)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench import ROOT
from bench.processes import run_to_end
from bench.sandbox.base import AgentRun
from bench.score.graders import Grader, LocalGrader
from bench.servers.base import Endpoints


class LocalSandbox:
    """A temp dir and a subprocess: for machines without Docker. The agent's commands run as this user, here."""

    trace_owner: int | None = None  # the model's commands run as the agent's user here: they could write the trace

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
