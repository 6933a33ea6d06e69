"""What a bench runs on: its `auto` settings resolved (each by the one function that knows, shared with
`bench up|down` and `bench score`), and the factory that builds the chosen sandboxes and servers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.config import BenchConfig, Choice
from bench.containers.engine import choose_sandbox, docker_available, docker_client
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.fixtures.fixture import Fixture
from bench.ownership import Ownership
from bench.sandbox.base import Sandbox
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.local import LocalSandbox
from bench.servers.base import Endpoints, Servers
from bench.servers.compose import choose_servers, make_compose_servers
from bench.servers.embedded import EmbeddedServers
from bench.servers.external import ExternalServers


class Factory:
    """Builds the chosen sandboxes and servers of one bench instance (whose record and names it holds); holds the
    one Docker client and the sandbox image."""

    def __init__(
        self, config: BenchConfig, sandbox: Choice, servers: Choice, ownership: Ownership | None = None
    ) -> None:
        self.config = config
        self.sandbox = sandbox
        self.servers = servers
        self.ownership = ownership or Ownership.new()
        self.names = BenchNames(self.ownership.instance)
        self.docker: Any = docker_client() if sandbox.kind == "docker" else None  # for sandboxes
        self.engine: Any = self.docker or (docker_client() if servers.kind == "compose" else None)  # any Docker use
        self.sandbox_image = ensure_sandbox_image(self.docker) if self.docker is not None else ""

    @classmethod
    def for_config(cls, config: BenchConfig) -> Factory:
        sandbox = choose_sandbox(config.sandbox)
        engine = sandbox.kind == "docker" or (config.servers == "auto" and docker_available())
        return cls(config, sandbox, choose_servers(config.servers, engine))

    def make_servers(self, log_dir: Path, fixtures: Sequence[Fixture]) -> Servers:
        """Servers for a plan on `fixtures` (forced tool calls offer their files)."""
        if self.servers.kind == "embedded":
            return EmbeddedServers(
                self.config, log_dir, self.docker, self.sandbox_image, ownership=self.ownership, fixtures=fixtures
            )
        if self.servers.kind == "external":
            return ExternalServers(self.config, self.docker, self.sandbox_image, self.names)
        return make_compose_servers(self.config, self.engine, log_dir=log_dir, names=self.names, fixtures=fixtures)

    def make_sandbox(self, endpoints: Endpoints, run_id: str) -> Sandbox:
        if self.sandbox.kind == "docker":
            return DockerSandbox(self.docker, self.sandbox_image, endpoints, self.config, run_id, self.names)
        return LocalSandbox(endpoints, self.config.run_timeout_s)
