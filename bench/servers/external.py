"""External servers: llama-servers someone else started; the bench only reads them."""

from __future__ import annotations

import logging

from bench.config import BenchConfig
from bench.errors import PrerequisiteError, ServerStartError
from bench.llama.api import is_healthy, wait_healthy
from bench.llama.serving import external_serving
from bench.servers.base import Endpoints, check_windows

# Someone else's server answers /health within this: one probe of 2 s refused a server busy beside a loaded machine.
HEALTHY_WITHIN_S = 10.0

log = logging.getLogger(__name__)


class ExternalServers:
    """Servers someone else started; the bench only reads them."""

    build_pin = ""  # someone else's servers: no build is expected

    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        if not config.flint_url:
            raise PrerequisiteError("--servers external needs Flint's URL: pass --flint-url or set FLINT_URL")
        self.flint_url = config.flint_url.rstrip("/")
        self.jeff_url = config.jeff_url.rstrip("/") if config.jeff_url and config.use_jeff else None
        if config.flint_server_args or config.jeff_server_args:  # e.g. a Kubernetes pod's sidecars got them
            log.warning(
                "external servers: the server args are recorded in each row as how they were started, not passed"
            )
        self.serving = external_serving(config)

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        """Someone else's servers at the windows they serve: Flint's must be `ctx`, Jeff's jeff_ctx; the bench
        cannot set Jeff's, so `jeff_ctx` is not asked for (bench/run/plan.py's jeff_window gives these jeff_ctx)."""
        for role, url in (("Flint", self.flint_url), ("Jeff", self.jeff_url)):
            if url and not wait_healthy([url], HEALTHY_WITHIN_S):
                raise ServerStartError(
                    f"{role}: no healthy llama-server answers at {url}/health: start it or fix the URL"
                )
        flint, jeff = check_windows(self.flint_url, ctx, self.jeff_url, self.config.jeff_ctx)
        return Endpoints(
            ctx=ctx,
            flint_url=self.flint_url,
            flint=flint.props,
            flint_model_path=None,  # not on this machine, as far as the bench knows: no sha256
            jeff_url=self.jeff_url,
            jeff=jeff.props if jeff else None,
            flint_serving=self.serving,
        )

    def healthy(self) -> bool:
        return all(is_healthy(u) for u in (self.flint_url, self.jeff_url) if u)

    def log_tail(self, lines: int = 20) -> str:
        return "(external servers: their logs are wherever they were started)"

    def stop(self) -> None:
        """Someone else's servers: nothing to stop."""
