"""gpu-check's servers start only after the image is built and the configured models are fetched and checked, each
once under its lock (bench.servers.shared, as a bench does before its workers): its compose Flint used to download its
model itself, unlocked and unchecked, into the cache a bench beside it may be filling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import gpu_check
from bench.config import BenchConfig
from bench.llama.hub import HubRef, cache_dir
from bench.llama.models import Model
from bench.servers import shared
from bench.servers.base import Endpoints
from bench.servers.choose import HostGpu
from bench.testing.fakes import FakeServers

COMPOSE_HOST = HostGpu("NVIDIA H100 80GB HBM3", True, "nvidia-ctk", ())
CUDA_BUILD_HOST = HostGpu("NVIDIA H100 80GB HBM3", False, "", ("CUDA0",))


class OrderedServers(FakeServers):
    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order, self.gpu = order, True

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        self.order.append("servers start")
        return super().start(ctx, jeff_ctx)


@pytest.mark.parametrize("host", [COMPOSE_HOST, CUDA_BUILD_HOST], ids=["compose", "embedded"])
def test_the_models_are_fetched_once_before_gpu_checks_servers_start(
    host: HostGpu, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    order: list[str] = []
    fetched: list[tuple[list[Model], Path]] = []

    def fetch_models(models: list[Model], cache: Path) -> None:
        order.append("fetch")
        fetched.append((models, cache))

    def memory_checks(config: BenchConfig, servers: Any, compose: bool, ctx: int) -> list[gpu_check.Check]:
        servers.start(ctx)
        return [gpu_check.Check("flint: NVML vs llama.cpp", "ok", "")]

    servers = OrderedServers(order)
    monkeypatch.setattr(shared, "fetch_models", fetch_models)
    monkeypatch.setattr(shared, "ensure_gpu_image", lambda *args: order.append("image"))
    monkeypatch.setattr(gpu_check, "docker_or_none", lambda: object())
    monkeypatch.setattr(gpu_check, "probe_host", lambda client: host)
    monkeypatch.setattr(gpu_check, "make_compose_servers", lambda *args, **kwargs: servers)
    monkeypatch.setattr(gpu_check, "EmbeddedServers", lambda *args, **kwargs: servers)
    monkeypatch.setattr(gpu_check, "memory_checks", memory_checks)
    monkeypatch.setattr(gpu_check, "compose_containers_left", lambda project: "")
    config = BenchConfig(use_jeff=False, model_cache=str(tmp_path / "cache"))
    checks = gpu_check.check_servers(config, 4096)
    assert [check.status for check in checks][:2] == ["ok", "ok"], checks
    made = ["image"] if host is COMPOSE_HOST else []
    assert order == [*made, "fetch", "servers start"]
    ((models, cache),) = fetched
    assert cache == cache_dir(config.model_cache) and [str(m) for m in models] == [config.flint_hf]
    assert isinstance(models[0], HubRef)
