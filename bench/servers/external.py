"""External servers: llama-servers someone else started; the bench only reads them."""

from __future__ import annotations

import urllib.parse
from typing import Any

from bench.config import BenchConfig
from bench.containers.forwarder import Forwarder
from bench.containers.names import BenchNames
from bench.containers.network import sandbox_network
from bench.errors import PrerequisiteError, ServerStartError
from bench.ownership import new_instance_id
from bench.servers.api import is_healthy
from bench.servers.base import Endpoints, check_windows


class ExternalServers:
    """Servers someone else started; the bench only reads them. Docker sandboxes reach them through a forwarder."""

    build_pin = ""  # someone else's servers: no build is expected

    def __init__(
        self, config: BenchConfig, docker_client: Any = None, sandbox_image: str = "", names: BenchNames | None = None
    ) -> None:
        self.config = config
        if not config.flint_url:
            raise PrerequisiteError("--servers external needs Flint's URL: pass --flint-url or set FLINT_URL")
        self.flint_url = config.flint_url.rstrip("/")
        self.jeff_url = config.jeff_url.rstrip("/") if config.jeff_url and config.use_jeff else None
        self.docker = docker_client
        self.names = names or BenchNames(new_instance_id())  # the bench instance's, or names of our own
        self.forwarder = (
            Forwarder(docker_client, sandbox_image, self.names, config.sampling) if docker_client is not None else None
        )

    def start(self, ctx: int) -> Endpoints:
        for role, url in (("Flint", self.flint_url), ("Jeff", self.jeff_url)):
            if url and not is_healthy(url):
                raise ServerStartError(
                    f"{role}: no healthy llama-server answers at {url}/health: start it or fix the URL"
                )
        flint, jeff = check_windows(self.flint_url, ctx, self.jeff_url, self.config.jeff_ctx)
        sandbox_net, flint_sandbox_url, jeff_sandbox_url = None, None, None
        if self.forwarder is not None:
            flint_target = _host_port(self.flint_url)
            jeff_target = _host_port(self.jeff_url) if self.jeff_url else None
            flint_sandbox_url, jeff_sandbox_url = self.forwarder.start(flint_target, jeff_target)
            sandbox_net = sandbox_network(self.docker, self.names)
        return Endpoints(
            ctx=ctx,
            flint_url=self.flint_url,
            flint=flint,
            flint_model_path=None,
            jeff_url=self.jeff_url,
            jeff=jeff,
            sandbox_network=sandbox_net,
            flint_sandbox_url=flint_sandbox_url,
            jeff_sandbox_url=jeff_sandbox_url,
        )

    def healthy(self) -> bool:
        servers_healthy = all(is_healthy(u) for u in (self.flint_url, self.jeff_url) if u)
        return servers_healthy and (self.forwarder is None or self.forwarder.healthy())

    def log_tail(self, lines: int = 20) -> str:
        return "(external servers: their logs are wherever they were started)"

    def stop(self) -> None:
        if self.forwarder is not None:
            self.forwarder.stop()


def _host_port(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if host in ("127.0.0.1", "localhost", "::1"):
        raise PrerequisiteError(
            f"{url} is on this host's loopback, which containers cannot reach: start llama-server with --host on an "
            "address containers reach (e.g. the docker bridge gateway), or use --sandbox local"
        )
    return host, parsed.port or 80
