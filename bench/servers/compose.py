"""Compose servers: compose.yaml's flint/jeff on the GPU, or flint-cpu/jeff-cpu (profile cpu) without one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.config import BenchConfig, Choice
from bench.containers.network import SANDBOX_INTERFACES, isolate_from_host, warn_once
from bench.errors import PrerequisiteError, ServerStartError
from bench.measure.nvml import nvidia_gpu_present
from bench.servers.api import is_healthy, wait_healthy
from bench.servers.base import Endpoints, check_windows
from bench.servers.binaries import find_small_model
from bench.servers.compose_cli import ComposeCli, find_compose
from bench.servers.cpu_image import ensure_llama_cpu_image
from bench.servers.process import free_port

COMPOSE_FILE = ROOT / "compose.yaml"


COMPOSE_PROJECT = "agentbench"


class ComposeServers:
    """compose.yaml's services: flint/jeff on the GPU, or flint-cpu/jeff-cpu (profile cpu) without one."""

    def __init__(self, config: BenchConfig, *, gpu: bool, cpu_image: str = "", log_dir: Path | None = None) -> None:
        self.config = config
        self.gpu = gpu
        self.cpu_image = cpu_image
        roles = ["flint", "jeff"] if config.use_jeff else ["flint"]  # Jeff off: not started, not in the GPU peak
        self.services = roles if gpu else [f"{role}-cpu" for role in roles]
        self.env: dict[str, str] = {}
        self.log_dir = log_dir  # compose.log there: which Compose ran each command
        self._cli: ComposeCli | None = None

    @property
    def cli(self) -> ComposeCli:
        if self._cli is None:
            self._cli = find_compose()
        return self._cli

    def _compose(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        profile = [] if self.gpu else ["--profile", "cpu"]
        cmd = [*self.cli.argv, "-p", COMPOSE_PROJECT, "-f", str(COMPOSE_FILE), *profile, *args]
        result = subprocess.run(cmd, env=self.env or None, capture_output=True, text=True, timeout=timeout)
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.log_dir / "compose.log", "a") as log:
                log.write(f"{self.cli.label}: {' '.join(args)} -> exit {result.returncode}\n")
        if check and result.returncode != 0:
            raise ServerStartError(f"`{' '.join(cmd[-3:])}` failed: {(result.stderr or result.stdout).strip()[-500:]}")
        return result

    def _models(self) -> tuple[Path, str, str]:
        if not self.gpu:
            model = find_small_model()
            return model.parent, model.name, model.name
        models_dir = Path(self.config.models_dir).expanduser().resolve()
        needed = (
            (self.config.flint_model, self.config.jeff_model) if self.config.use_jeff else (self.config.flint_model,)
        )
        for name in needed:
            if not name or not (models_dir / name).is_file():
                raise PrerequisiteError(
                    f"model {name or '(unset)'} not found in {models_dir}: set models_dir, flint_model and jeff_model "
                    "in bench.yaml (or MODELS_DIR/FLINT_MODEL/JEFF_MODEL for make up)"
                )
        return models_dir, self.config.flint_model, self.config.jeff_model

    def start(self, ctx: int, ports: tuple[int, int] | None = None) -> Endpoints:
        models_dir, flint_model, jeff_model = self._models()
        flint_port, jeff_port = ports or (free_port(), free_port())
        self.env = dict(os.environ) | {
            "FLINT_PORT": str(flint_port),
            "JEFF_PORT": str(jeff_port),
            "CTX": str(ctx),
            "JEFF_CTX": str(self.config.jeff_ctx),
            "MODELS_DIR": str(models_dir),
            "FLINT_MODEL": flint_model,
            "JEFF_MODEL": jeff_model,
            "LLAMA_IMAGE": self.config.llama_image,
            "LLAMA_CPU_IMAGE": self.cpu_image,
            "GPU_DEVICE": self.config.gpu_device,
        }
        print(f"bench: compose servers via {self.cli.label}", flush=True)
        self._compose("up", "-d", "--force-recreate", *self.services)
        warn_once(isolate_from_host(SANDBOX_INTERFACES[1]))
        flint_url = f"http://127.0.0.1:{flint_port}"
        jeff_url = f"http://127.0.0.1:{jeff_port}" if self.config.use_jeff else None
        if not wait_healthy([u for u in (flint_url, jeff_url) if u], self.config.server_start_timeout_s):
            tail = self.log_tail()
            self.stop()
            raise ServerStartError(
                f"compose servers not healthy after {self.config.server_start_timeout_s:.0f}s "
                f"(raise server_start_timeout_s for large models); log tail:\n{tail}"
            )
        flint_props, jeff_props = check_windows(flint_url, ctx, jeff_url, self.config.jeff_ctx)
        return Endpoints(
            ctx=ctx,
            flint_url=flint_url,
            flint=flint_props,
            flint_model_path=models_dir / flint_model,
            jeff_url=jeff_url,
            jeff=jeff_props,
            jeff_model_path=(models_dir / jeff_model) if jeff_url else None,
            sandbox_network=f"{COMPOSE_PROJECT}_sandbox",
            flint_sandbox_url="http://flint:8080",
            jeff_sandbox_url="http://jeff:8080" if jeff_url else None,
            server_containers=self._container_ids(),
        )

    def _container_ids(self) -> dict[str, str]:
        ids = {}
        for role, service in zip(("flint", "jeff"), self.services, strict=False):
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


def choose_servers(requested: str, engine: bool) -> Choice:
    """compose needs an engine and, for its GPU services, a GPU; without a GPU the embedded CPU servers are used."""
    if requested != "auto":
        return Choice(requested, "asked for")
    gpu = nvidia_gpu_present()
    if engine and gpu:
        return Choice("compose", "Docker and an NVIDIA GPU are present")
    return Choice("embedded", "no NVIDIA GPU" if not gpu else "a GPU but no Docker engine")


def make_compose_servers(
    config: BenchConfig, client: Any, *, build_image: bool = True, log_dir: Path | None = None
) -> ComposeServers:
    """compose.yaml's GPU services where NVML finds a GPU, else its cpu profile (whose image is built here)."""
    gpu = nvidia_gpu_present()
    cpu_image = ensure_llama_cpu_image(client) if not gpu and build_image else ""
    return ComposeServers(config, gpu=gpu, cpu_image=cpu_image, log_dir=log_dir)
