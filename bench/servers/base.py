"""What every kind of server set (embedded, compose, external) answers with, and the protocol they share.

Each kind starts at a context size and answers with Endpoints: where the servers answer on this host, what each
reports about itself, and how to find its processes. Servers know nothing of sandboxes: a sandbox kind makes its
own way to these URLs (bench.sandbox.reach); compose servers also name the gates they keep on a network of their
own, which a sandbox of the same engine may join.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.agents.article import Props
from bench.llama.api import ServerInfo, check_ctx
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher


@dataclass(frozen=True)
class Gates:
    """Where containers on the servers' own network reach them: compose.yaml's gates, `flint` and `jeff` on its
    sandbox network, which pass on only what the agent needs (docker/forward.py)."""

    engine: str  # the container engine whose network it is ("docker": compose runs under Docker)
    network: str
    flint_url: str
    jeff_url: str | None


@dataclass(frozen=True)
class Endpoints:
    """Flint and Jeff as served for one context size; Jeff's fields are None when Jeff is off."""

    ctx: int  # the window Flint serves, checked against /props
    flint_url: str
    flint: Props
    flint_model_path: Path | None  # on this machine, for the sha256; None when not reachable (external)
    jeff_url: str | None = None
    jeff: Props | None = None
    jeff_model_path: Path | None = None
    gates: Gates | None = None  # compose: the servers' own gates on a container network
    server_pids: Mapping[str, int] = field(default_factory=dict)  # host processes (embedded)
    server_containers: Mapping[str, str] = field(default_factory=dict)  # container ids (compose)
    flint_serving: str = "native"  # how Flint is served: native | forced_tools | native-fenced | ... (llama/serving.py)
    jeff_ctx: int | None = None  # the window the bench started Jeff with (checked); None: not the bench's to set
    on_gpu: bool = False  # the bench started them on a GPU: they get a warm-up request (bench/llama/warmup.py)
    flint_reported: Mapping[str, str] = field(default_factory=dict)  # what Flint's log said of its cache (llama.reuse)

    @property
    def flint_model(self) -> str:
        return self.flint_model_path.name if self.flint_model_path else Path(self.flint.model).name

    @property
    def jeff_model(self) -> str:
        if self.jeff is None:
            return ""
        return self.jeff_model_path.name if self.jeff_model_path else Path(self.jeff.model).name

    @property
    def urls(self) -> list[str]:
        """The servers' URLs as the bench reaches them."""
        return [url for url in (self.flint_url, self.jeff_url) if url]

    @property
    def server_build(self) -> str:
        return self.flint.build

    def process_matcher(self) -> ProcessMatcher:
        """Which GPU process is which server: by container for compose, by host PID otherwise."""
        if self.server_containers:
            return ContainerMatcher(self.server_containers)
        return PidMatcher(self.server_pids)


def check_windows(
    flint_url: str, ctx: int, jeff_url: str | None, jeff_ctx: int
) -> tuple[ServerInfo, ServerInfo | None]:
    """Both servers' /props, after checking each serves the window it must (ServerStartError names the one off)."""
    flint = check_ctx(flint_url, ctx, "Flint")
    jeff = check_ctx(jeff_url, jeff_ctx, "Jeff (set jeff_ctx to its window)") if jeff_url else None
    return flint, jeff


class Servers(Protocol):
    build_pin: str  # the llama.cpp build these servers should report (bench.llama.pin), "" when none is expected

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints: ...

    def healthy(self) -> bool: ...

    def log_tail(self, lines: int = 20) -> str: ...

    def stop(self) -> None: ...


def threads_warning(threads: int | None, cores: int | None = None) -> str | None:
    """A warning when the threads setting takes every core of this machine for a CPU server, else None."""
    cores = cores or os.cpu_count() or 1
    if threads is None or threads < cores:
        return None
    return (
        f"threads {threads} is at least this machine's {cores} cores: llama.cpp's threads spin at each barrier, and "
        f"beside the agent and its tests a CPU server on every core slows many times over (generation 18x slower on "
        f"2 cores under load); leave one core free: threads {max(1, cores - 1)}, or unset it"
    )


def default_threads() -> int:
    """Leave one core to the agent, its tests and the containers: llama.cpp's threads spin while they wait, and
    on a small machine a server using every core slows to a crawl whenever anything else runs."""
    return max(1, (os.cpu_count() or 2) - 1)
