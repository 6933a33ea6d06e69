"""Agents other than the article's in the docker sandbox: their image (the sandbox image and their packages,
bench/containers/agent_image.py), and the recording proxy in a container of its own between them and Flint
(bench/containers/recorder.py), whose log becomes the run's trace.

Such an agent runs as the repository's owner with no capability at all (it has no second user to start its commands
as), on the same internal network as the article's, reaching only the proxy; its own files go to /tmp.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agents.base import AgentKind
from bench.agents.install import packages
from bench.containers.agent_image import agent_home, ensure_agent_image, ensure_npm_agent_image
from bench.containers.names import BenchNames
from bench.containers.recorder import Recorder
from bench.sandbox.record_proxy import PROXY_LOG


@dataclass
class OtherAgents:
    """What the docker kind needs to run other agents: their images (built once a bench) and where Flint is."""

    client: Any
    sandbox_image: str
    names: BenchNames
    checkout: Path  # this repository: the agent image's Dockerfile
    flint: tuple[str, int] | None = None  # Flint on this host, as containers reach it; None: behind compose's gates
    images: dict[str, str] = field(default_factory=dict)

    def image(self, kind: AgentKind) -> str:
        if kind.name not in self.images:
            pip = kind.install.pip
            self.images[kind.name] = (
                ensure_agent_image(self.client, self.sandbox_image, kind.name, pip, checkout=self.checkout)
                if pip
                else self.sandbox_image
            )
            if kind.install.npm:
                self.images[kind.name] = ensure_npm_agent_image(self.client, self.sandbox_image, kind, self.checkout)
        return self.images[kind.name]

    def home(self, kind: AgentKind) -> str:
        return agent_home(kind.name) if packages(kind) else ""

    def recording(self, log_dir: Path, max_steps: int, timeout_s: float) -> Recorder:
        assert self.flint is not None
        return Recorder(
            self.client,
            self.sandbox_image,
            self.names,
            self.flint,
            log_dir=log_dir,
            max_steps=max_steps,
            timeout_s=timeout_s,
        )


class ProxyLog:
    """A host folder for the proxy's log while the run lasts; the log is copied into the run's out folder after it,
    over anything the agent may have put there."""

    def __enter__(self) -> ProxyLog:
        self.folder = Path(tempfile.mkdtemp(prefix="agentbench-proxy-"))
        return self

    def keep(self, out_dir: Path) -> None:
        if (self.folder / PROXY_LOG).exists():
            shutil.copyfile(self.folder / PROXY_LOG, out_dir / PROXY_LOG)

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
