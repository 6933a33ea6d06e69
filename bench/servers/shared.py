"""What every worker's servers share on one host, made once before any worker starts (bench.run.runner): the
llama-server image compose starts (built under a lock: bench.llama.cuda_image, cpu_image) and the hub models, fetched
into the shared cache under a lock and checked against the hub's listing (bench.llama.fetch).

Without this step each worker made them as its servers first started: with `gpu_devices: all` on a fresh host, every
worker began the same CUDA image build, and every Flint downloaded the model into the same cache file at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.llama.cuda_image import ensure_gpu_image
from bench.llama.fetch import fetch_models
from bench.llama.hub import cache_dir
from bench.llama.models import configured_models, serves_small_model
from bench.servers.choose import HostGpu


@dataclass(frozen=True)
class Shared:
    """What the shared things are made from: the bench's settings and this host as the bench saw it."""

    config: BenchConfig
    gpu: HostGpu
    docker: Any  # the bench's Docker client, None where no engine answers
    checkout: Path  # this repository: compose.yaml, the Dockerfiles


def nothing_shared(shared: Shared) -> None:
    """Servers the bench does not start (external) or a test's own."""


def fetch_served_models(config: BenchConfig, gpu: bool) -> None:
    """The configured hub models the servers start (Jeff's only with `use_jeff`), when they serve them (a GPU, or
    `cpu_models: configured`); the small model of a CPU is a file already (or assembled under its own lock:
    bench.llama.chunks)."""
    if not serves_small_model(config, gpu):
        models = configured_models(config)
        served = [models.flint, models.jeff] if config.use_jeff else [models.flint]
        fetch_models(served, cache_dir(config.model_cache))


def prepare_embedded(shared: Shared) -> None:
    fetch_served_models(shared.config, gpu=bool(shared.gpu.llama_gpus))


def prepare_compose(shared: Shared) -> None:
    gpu = bool(shared.gpu.nvidia_gpu)
    if shared.docker is not None:  # without an engine, making the servers says so (bench.servers.kinds)
        if gpu:
            ensure_gpu_image(shared.docker, shared.config.llama_image, shared.checkout)
        else:
            ensure_llama_cpu_image(shared.docker, shared.checkout)
    fetch_served_models(shared.config, gpu)
