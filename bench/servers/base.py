"""What every kind of server set (embedded, compose, external) answers with, and the protocol they share.

Each kind starts at a context size and answers with Endpoints: the URLs the bench uses, the URLs a docker sandbox
uses (on the internal sandbox network), and what the GPU sampler needs to attribute memory to each server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass
class Endpoints:
    flint_url: str
    jeff_url: str | None
    flint_model: str  # GGUF file name
    jeff_model: str
    flint_model_path: Path | None  # on this machine, for the sha256; None when not reachable (external)
    jeff_model_path: Path | None
    server_build: str
    sandbox_network: str | None = None  # docker network sandboxes join; None: no docker sandbox possible
    flint_sandbox_url: str | None = None
    jeff_sandbox_url: str | None = None
    server_pids: dict[str, int] | None = None  # host PIDs (embedded)
    server_containers: dict[str, str] | None = None  # container ids (compose)


class Servers(Protocol):
    kind: str

    def start(self, ctx: int) -> Endpoints: ...

    def healthy(self) -> bool: ...

    def log_tail(self, lines: int = 20) -> str: ...

    def stop(self) -> None: ...


def default_threads() -> int:
    """Leave one core to the agent, its tests and the containers: llama.cpp's threads spin while they wait, and
    on a small machine a server using every core slows to a crawl whenever anything else runs."""
    return max(1, (os.cpu_count() or 2) - 1)
