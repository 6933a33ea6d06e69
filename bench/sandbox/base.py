"""What every sandbox kind offers: where servers on this host must listen for it, the way from its sandboxes to the
servers, one sandbox per run, and (for the container kinds) the engine that grading runs in too.

Either way the agent works on a fresh copy of the fixture (made by the runner) and never sees the hidden tests:
they live outside that copy and only meet the agent's changes later, in a separate grading sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.agents.base import AgentCommand
from bench.containers.names import BenchNames
from bench.servers.base import Endpoints


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
    """One run's sandbox."""

    # The uid that must own the trace the agent wrote (read_trace_safely's owner_uid); None: no check is possible,
    # because the model's commands run as the agent's own user (the local sandbox).
    trace_owner: int | None

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent: AgentCommand
    ) -> AgentRun:
        """Run `agent` on the work copy: the sandbox says where things are (a Place), the kind how it starts."""
        ...


@dataclass(frozen=True)
class Engine:
    """A container engine for one bench: its client, the sandbox image built there, and the bench's names. Grading
    runs in the same engine as the sandboxes (bench.score.graders.grader_for)."""

    kind: str  # docker | podman
    client: Any  # a docker SDK client: podman's service answers the same API
    image: str  # the sandbox image (bench.containers.images); graders and the forwarder run it too
    names: BenchNames


@dataclass(frozen=True)
class Reach:
    """The servers as a container sandbox reaches them: the network it joins and the URLs it uses there."""

    network: str
    flint_url: str
    jeff_url: str | None
    hosts: Mapping[str, str] = field(default_factory=dict)  # names in the sandbox's /etc/hosts, name -> address


class Sandboxes(Protocol):
    """A sandbox kind for the length of one bench (bench.sandbox.kinds lists them)."""

    kind: str

    @property
    def engine(self) -> Engine | None:
        """The container engine the sandboxes run in (grading runs there too); None for the local kind."""
        ...

    def server_host(self) -> str:
        """The address servers started on this host listen on, so that these sandboxes can reach them."""
        ...

    def connect(self, endpoints: Endpoints) -> None:
        """Make the way from the sandboxes to these servers (after each start of the servers)."""
        ...

    def healthy(self) -> bool:
        """The way to the servers still works (a dead or stuck forwarder is not healthy); True when there is none."""
        ...

    def sandbox(self, run_label: str, language: str = "python") -> Sandbox:
        """The sandbox of one run on a fixture of `language` (a container kind runs it in that language's image)."""
        ...

    def close(self) -> None: ...
