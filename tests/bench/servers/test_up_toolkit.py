"""`make up` on a GPU host whose Docker has no NVIDIA Container Toolkit says so before it builds the CUDA image (a
build of many minutes that could only end in a service that cannot reach the card): bench/servers/updown.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.config import BenchConfig
from bench.containers import nvidia_toolkit
from bench.errors import PrerequisiteError
from bench.servers import updown

CHECKOUT = Path(__file__).resolve().parents[3]


class Docker:
    def __init__(self, runtimes: dict[str, Any]) -> None:
        self.runtimes = runtimes

    def info(self) -> dict[str, Any]:
        return {"Runtimes": self.runtimes}


@pytest.fixture
def gpu_host(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    built: list[bool] = []
    monkeypatch.setattr(updown, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(nvidia_toolkit.shutil, "which", lambda program: None)
    monkeypatch.setattr(updown, "make_compose_servers", lambda *args, **kwargs: built.append(kwargs["build_image"]))
    return built


def test_up_without_the_toolkit_is_refused_before_any_build(
    gpu_host: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(updown, "docker_client", lambda: Docker({"runc": {}}))
    with pytest.raises(PrerequisiteError, match="Docker has no NVIDIA Container Toolkit .* Install the toolkit"):
        updown.up(BenchConfig(ctx=[4096]), CHECKOUT)
    assert gpu_host == []


def test_up_with_the_toolkit_and_down_without_it_go_on(gpu_host: list[bool], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(updown, "docker_client", lambda: Docker({"runc": {}, "nvidia": {}}))
    updown._servers(BenchConfig(ctx=[4096]), CHECKOUT, build_image=True)
    monkeypatch.setattr(updown, "docker_client", lambda: Docker({"runc": {}}))
    updown._servers(BenchConfig(ctx=[4096]), CHECKOUT, build_image=False)  # down builds nothing: it stops what runs
    assert gpu_host == [True, False]
