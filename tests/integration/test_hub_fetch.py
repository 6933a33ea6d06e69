"""The download path for real: llama-server's own `-hf` against a local stand-in for the hub, serving the small
model under the default Flint's and Jeff's repository and file names. Host servers and compose's cpu profile each
fetch into the shared cache once, start again from it offline (no hub request, also with the hub gone), and the
bench finds and hashes the file that was served. The memory sampler attributes each server's GPU process, by host
PID or by container cgroup.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.names import BenchNames
from bench.llama.api import read_props
from bench.llama.binaries import find_small_model
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher
from bench.measure.sampler import GpuSampler
from bench.ownership import new_instance_id
from bench.servers.base import Endpoints
from bench.servers.compose import ComposeServers
from bench.servers.embedded import EmbeddedServers
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State
from bench.testing.host_targets import default_bridge_address
from bench.testing.hub_standin import DEFAULT_FILES, HubStandIn, default_models_as

pytestmark = pytest.mark.llama
ROOT = Path(__file__).resolve().parents[2]
FLINT_FILE, JEFF_FILE = DEFAULT_FILES.values()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_served_from(cache: Path, endpoints: Endpoints, small_sha: str) -> None:
    assert (endpoints.flint_model, endpoints.jeff_model) == (FLINT_FILE, JEFF_FILE)
    for path in (endpoints.flint_model_path, endpoints.jeff_model_path):
        assert path is not None and path.is_relative_to(cache) and path.is_file(), path
        assert sha256(path) == small_sha  # what the row's *_model_sha256 records


def sampled_roles(matcher: ProcessMatcher, pids: dict[str, int]) -> dict[str, int | None]:
    """A fake NVML lists the servers' host PIDs (2 and 1 GiB) and a stranger; the sampler names each server's."""
    processes = [(pids["flint"], 2 * GIB), (pids["jeff"], GIB), (1, GIB)]
    nvml = FakeNvml([FakeDevice("GPU-fake", [State(used=5 * GIB, processes=processes)])])
    sampler = GpuSampler(matcher, interval_s=0.01, nvml=nvml)
    sampler.baseline()
    sampler.start()
    return sampler.stop().peak_role_mib


def test_host_servers_fetch_once_start_again_from_the_cache_even_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small = find_small_model()
    cache = tmp_path / "cache"
    config = BenchConfig(cpu_models="configured", model_cache=str(cache), jeff_ctx=512, threads=1)
    servers = EmbeddedServers(config, tmp_path / "logs", checkout=ROOT)
    try:
        with HubStandIn(default_models_as(small), bytes_per_s=30_000_000) as hub:  # about 3 s per file
            monkeypatch.setenv("MODEL_ENDPOINT", hub.url)
            first = servers.start(1024)
            assert_served_from(cache, first, sha256(small))
            # Served as configured models, Flint is native: docker/flint-native's empty files mean its own template.
            assert first.flint_serving == "native"
            assert "<|im_start|>" in httpx.get(first.flint_url + "/props", timeout=10).json()["chat_template"]
            printed = capsys.readouterr().out
            assert f"flint: downloading {FLINT_FILE}" in printed and f"jeff: downloading {JEFF_FILE}" in printed
            asked = len(hub.requests)
            second = servers.start(1024)
            assert second.flint_model_path == first.flint_model_path
            assert list(hub.downloads.values()) == [1, 1], hub.downloads  # the second start fetched nothing
            # Both models are cached now, so the servers start offline (LLAMA_ARG_OFFLINE=1): no request at all.
            assert hub.requests[asked:] == []
        third = servers.start(1024)  # the hub is gone: llama.cpp falls back to what the cache holds
        assert third.flint_model_path == first.flint_model_path and read_props(third.flint_url).n_ctx == 1024
        assert third.server_pids is not None
        roles = sampled_roles(PidMatcher(third.server_pids), third.server_pids)
        assert roles == {"flint": 2048, "jeff": 1024}
    finally:
        servers.stop()


def test_make_models_fetches_ahead_and_a_second_call_finds_everything_there(tmp_path: Path) -> None:
    small = find_small_model()
    cache = tmp_path / "cache"
    with HubStandIn(default_models_as(small)) as hub:
        env = dict(os.environ, MODEL_ENDPOINT=hub.url, MODEL_CACHE=str(cache))
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-m", "bench", "models"], cwd=ROOT, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert str(cache) in done.stderr and "GiB" in done.stderr  # progress is logged, on stderr
        assert list(hub.downloads.values()) == [1, 1], hub.downloads


@pytest.mark.docker
@pytest.mark.compose
def test_compose_cpu_profile_fetches_into_the_host_cache_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    client: Any = docker_client()
    small = find_small_model()
    cache = tmp_path / "cache"
    config = BenchConfig(cpu_models="configured", model_cache=str(cache), jeff_ctx=512)
    names = BenchNames(new_instance_id())  # a bench's own project: other tests' compose projects run beside it
    servers = ComposeServers(
        config, gpu=False, cpu_image=ensure_llama_cpu_image(client, ROOT), names=names, checkout=ROOT
    )
    # The containers reach this host at its address on Docker's default bridge, so the stand-in listens there.
    gateway = default_bridge_address(client)
    with HubStandIn(default_models_as(small), host=gateway) as hub:
        monkeypatch.setenv("MODEL_ENDPOINT", hub.url)
        try:
            first = servers.start(1024)
            assert_served_from(cache, first, sha256(small))
            # Served as configured models, Flint is native: docker/flint-native's empty files mean its own template.
            assert first.flint_serving == "native"
            assert "<|im_start|>" in httpx.get(first.flint_url + "/props", timeout=10).json()["chat_template"]
            owner = first.flint_model_path.resolve().stat()  # type: ignore[union-attr]
            assert (owner.st_uid, owner.st_gid) == (os.getuid(), os.getgid())  # the containers ran as us
            assert first.server_containers is not None
            pids = {
                role: client.containers.get(cid).attrs["State"]["Pid"] for role, cid in first.server_containers.items()
            }
            cgroup = Path(f"/proc/{pids['flint']}/cgroup").read_text()
            assert ContainerMatcher(first.server_containers).role_of(pids["flint"]) == "flint", cgroup
            assert sampled_roles(ContainerMatcher(first.server_containers), pids) == {"flint": 2048, "jeff": 1024}
            servers.stop()
            asked = len(hub.requests)
            second = servers.start(1024)  # new containers, same host cache
            assert second.flint_model_path == first.flint_model_path
            assert list(hub.downloads.values()) == [1, 1], hub.downloads
            assert hub.requests[asked:] == []  # offline (LLAMA_ARG_OFFLINE=1 passed into compose): nothing asked
        finally:
            servers.stop()
