"""What `servers: auto` runs on this host, and why: compose on the GPU, host llama-server on the GPU, or the CPU.

- compose: an NVIDIA GPU, Docker, and the NVIDIA Container Toolkit (`docker info` lists an `nvidia` runtime, or
  `nvidia-container-cli` is installed): compose.yaml's GPU services from the pinned image.
- embedded on the GPU: an NVIDIA GPU and a llama-server that sees it (`make setup GPU=cuda`), no toolkit needed.
- embedded on the CPU: everything else; the small model plays both roles (unless `cpu_models: configured`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.config import Choice
from bench.containers.nvidia_toolkit import container_toolkit
from bench.errors import PrerequisiteError
from bench.llama.devices import list_devices, llama_backend
from bench.measure.nvml import gpu_names


@dataclass(frozen=True)
class HostGpu:
    """What decides where the servers run."""

    nvidia_gpu: str  # the GPUs NVML sees ("" when none), e.g. "NVIDIA A100-SXM4-40GB"
    docker: bool  # a Docker engine answers
    toolkit: str  # how the NVIDIA Container Toolkit was found ("" when not)
    llama_gpus: tuple[str, ...]  # GPU devices the installed llama-server can use (empty: a CPU build)
    llama_backend: str = ""  # what the installed llama-server was built for ("cuda", "cpu"; "" when unknown)
    llama_problem: str = ""  # why `llama-server --list-devices` failed, when it did


def check_cuda_build(host: HostGpu) -> None:
    """A CUDA build that sees no GPU on a host whose NVML sees one is an error, never a quiet run on the CPU."""
    if host.nvidia_gpu and host.llama_backend == "cuda" and not host.llama_gpus:
        raise PrerequisiteError(
            f"this llama-server is a CUDA build but lists no CUDA device, while NVML sees {host.nvidia_gpu} "
            f"({host.llama_problem or 'no device listed'}): rebuild with `rm .venv/cuda.mk && make setup GPU=cuda`, "
            "or go back to the CPU build with `make setup GPU=cpu`"
        )


def embedded_on_gpu() -> bool:
    """Whether host-process servers run on a GPU here: the build lists one (a CUDA build listing none, where NVML
    sees a GPU, is an error: check_cuda_build)."""
    devices, problem = list_devices()
    if not devices:
        check_cuda_build(
            HostGpu(
                nvidia_gpu=", ".join(gpu_names()),
                docker=False,
                toolkit="",
                llama_gpus=devices,
                llama_backend=llama_backend(),
                llama_problem=problem,
            )
        )
    return bool(devices)


def where_servers_run(host: HostGpu) -> tuple[str, str]:
    """(kind, reason) for `servers: auto`: kind is "compose" or "embedded"; the reason says what was found."""
    if host.nvidia_gpu and host.docker and host.toolkit:
        return "compose", f"{host.nvidia_gpu} with Docker and the NVIDIA Container Toolkit ({host.toolkit})"
    check_cuda_build(host)
    if host.nvidia_gpu and host.llama_gpus:
        why = "no Docker engine" if not host.docker else "no NVIDIA Container Toolkit"
        return "embedded", f"{host.nvidia_gpu} and a llama-server built for it ({host.llama_gpus[0]}); {why}"
    if host.nvidia_gpu:
        return "embedded", (
            f"{host.nvidia_gpu}, but neither the NVIDIA Container Toolkit nor a GPU build of llama-server: host "
            "llama-server on the CPU (install the toolkit, or run `make setup GPU=cuda`)"
        )
    return "embedded", "no NVIDIA GPU: host llama-server on the CPU"


def choose_servers(requested: str, host: HostGpu) -> Choice:
    """What `servers: auto` runs, and why; another setting is taken as asked."""
    if requested != "auto":
        return Choice(requested, "asked for")
    kind, reason = where_servers_run(host)
    return Choice(kind, reason)


def probe_host(docker_client: Any = None) -> HostGpu:
    """Look at this host, once per bench: NVML, the Docker engine (the client the bench already holds, or None) and
    its runtimes, and the installed llama-server."""
    info: dict[str, Any] | None = None
    if docker_client is not None:
        try:
            info = docker_client.info()
        except Exception:  # an engine that does not answer counts as none
            info = None
    names = gpu_names()
    devices, problem = list_devices() if names else ((), "")
    return HostGpu(
        nvidia_gpu=", ".join(names),
        docker=info is not None,
        toolkit=container_toolkit(info),
        llama_gpus=devices,
        llama_backend=llama_backend(),
        llama_problem=problem,
    )
