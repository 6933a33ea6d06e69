"""What a bench runs on, each looked at once: the Docker engine (one probe), the host's GPUs (one probe), the `auto`
settings resolved from them (by the functions `bench up|down` and `bench score` share), and the factory that builds
the chosen sandboxes and servers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import BenchConfig, Choice
from bench.containers.engine import docker_or_none
from bench.containers.names import BenchNames
from bench.fixtures.fixture import Fixture
from bench.ownership import Ownership
from bench.sandbox.base import Sandboxes
from bench.sandbox.kinds import choose_sandbox, make_sandboxes
from bench.servers.base import Servers
from bench.servers.choose import HostGpu, choose_servers, probe_host
from bench.servers.kinds import Kind, Making, kind, may_need_docker, needs_gpu_probe
from bench.servers.shared import Shared


@dataclass(frozen=True)
class Host:
    """This host as one bench sees it, looked at once: the Docker client (None: no engine answers) and the GPUs."""

    docker: Any
    gpu: HostGpu

    @classmethod
    def probe(cls, config: BenchConfig) -> Host:
        wanted = config.sandbox in ("auto", "docker") or may_need_docker(config.servers)
        docker = docker_or_none() if wanted else None
        gpu = probe_host(docker) if needs_gpu_probe(config.servers) else HostGpu("", docker is not None, "", ())
        return cls(docker, gpu)


class Factory:
    """Builds the chosen sandboxes and servers of one bench instance (whose record and names it holds)."""

    def __init__(
        self,
        config: BenchConfig,
        sandbox: Choice,
        servers: Choice,
        host: Host,
        *,
        sandboxes: Sandboxes | None = None,
        ownership: Ownership | None = None,
        server_kind: Kind | None = None,
        checkout: Path,
    ) -> None:
        self.config = config
        self.checkout = checkout  # this repository: the files its sandboxes and servers are built of
        self.sandbox = sandbox
        self.servers = servers
        self.host = host
        self.ownership = ownership or Ownership.new()
        self.names = BenchNames(self.ownership.instance)
        self.sandboxes = sandboxes or make_sandboxes(
            sandbox.kind, config, self.names, docker=host.docker, checkout=checkout
        )
        engine = self.sandboxes.engine
        # The engine whose objects this instance may leave behind (bench.run.instance removes them).
        self.server_kind = server_kind or kind(servers.kind)  # an unknown kind is refused here, before anything runs
        under_docker = self.server_kind.needs_docker
        self.engine: Any = engine.client if engine is not None else (host.docker if under_docker else None)

    @classmethod
    def for_config(cls, config: BenchConfig, checkout: Path) -> Factory:
        host = Host.probe(config)
        sandbox, servers = choose_sandbox(config.sandbox, host.docker), choose_servers(config.servers, host.gpu)
        return cls(config, sandbox, servers, host, checkout=checkout)

    @classmethod
    def for_configs(cls, configs: Sequence[BenchConfig], checkout: Path) -> list[Factory]:
        """One factory per worker (bench.run.workers.worker_configs), the host looked at once for all of them."""
        host = Host.probe(configs[0])
        sandbox, servers = choose_sandbox(configs[0].sandbox, host.docker), choose_servers(configs[0].servers, host.gpu)
        return [cls(config, sandbox, servers, host, checkout=checkout) for config in configs]

    def serving(self) -> str:
        """How the chosen servers will serve Flint (bench/llama/serving.py), known before they are made."""
        return self.server_kind.flint_serving(self.config, self.host.gpu)

    def prepare_shared(self) -> None:
        """What every worker's servers share on this host (an image, the models), made once before any starts."""
        self.server_kind.prepare(Shared(self.config, self.host.gpu, self.host.docker, self.checkout))

    def make_servers(self, log_dir: Path, fixtures: Sequence[Fixture]) -> Servers:
        """Servers of the chosen kind (bench.servers.kinds) for a plan on `fixtures` (forced tool calls offer their
        files)."""
        making = Making(
            config=self.config,
            log_dir=log_dir,
            fixtures=fixtures,
            gpu=self.host.gpu,
            docker=self.host.docker,
            server_host=self.sandboxes.server_host(),
            ownership=self.ownership,
            names=self.names,
            checkout=self.checkout,
        )
        return self.server_kind.make(making)
