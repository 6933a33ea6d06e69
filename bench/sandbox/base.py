"""What every sandbox offers: run the agent on a work copy, and a grader of the same strength for scoring it.

Either way the agent works on a fresh copy of the fixture (made by the runner) and never sees the hidden tests:
they live outside that copy and only meet the agent's changes later, in a separate grading sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.score.graders import Grader


@dataclass
class AgentRun:
    exit_code: int | None  # None when the process was killed or never started
    timed_out: bool
    wall_s: float
    output: str  # the agent's stdout and stderr
    infra_error: str | None = None  # the sandbox itself failed (container did not start, ...)
    changes_lost: str | None = None  # why the agent's files could not all be brought back: the run is not graded
    # The sandbox limits the run used up (memory, the repository's size): the agent's doing, so its failure.
    resources_exhausted: list[str] = field(default_factory=list)
    killed_for_memory: bool = False  # the kernel killed the agent itself, so it wrote no stop line


class Sandbox(Protocol):
    # The uid that must own the trace the agent wrote (read_trace_safely's owner_uid); None: no check is possible,
    # because the model's commands run as the agent's own user (the local sandbox).
    trace_owner: int | None

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent_args: list[str]
    ) -> AgentRun: ...

    def grader(self) -> Grader: ...
