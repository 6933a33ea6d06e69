"""Hub models fetched once, and checked, before any server starts (bench.llama.fetch, bench.servers.shared): llama.cpp's
own downloader against a local stand-in hub. Four `bench models` started together on one empty cache download each
file once; a bench of four workers on an empty cache builds the image once (a double of the builder) and downloads the
model once, before any worker's servers start; a corrupted or short download is refused in one line and never
replaces what the cache holds, and a corrupted file already cached is named.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from builder_double import Client, count_builds
from small_task import SETTINGS

from bench import ROOT
from bench.config import BenchConfig, Choice
from bench.errors import PrerequisiteError
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.cuda_image import CUDA_IMAGE, ensure_gpu_image
from bench.llama.fetch import fetch
from bench.llama.hub import HubRef, cached_model, hub_environment
from bench.run.choices import Factory, Host
from bench.run.runner import Bench
from bench.run.workers import worker_configs
from bench.servers.base import Endpoints
from bench.servers.choose import HostGpu
from bench.servers.kinds import KINDS, Making
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State
from bench.testing.fakes import FakeSandboxes, FakeServers
from bench.testing.hub_standin import DEFAULT_FILES, HubFile, HubStandIn

pytestmark = pytest.mark.llama
REPO = "test-org/Tiny-GGUF"
Q8, Q4 = HubRef(REPO, "Q8_0"), HubRef(REPO, "Q4_K_M")
Q8_FILE, Q4_FILE = "Tiny-Q8_0.gguf", "Tiny-Q4_K_M.gguf"


def model_file(path: Path, seed: int, size: int = 2_000_000) -> Path:
    """Bytes shaped like a GGUF file (llama.cpp's downloader reads none of them)."""
    path.write_bytes(b"GGUF" + random.Random(seed).randbytes(size - 4))
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def llama_finds_offline(cache: Path, ref: HubRef) -> str:
    """The file llama.cpp's own cache reader finds for `ref` in `cache` with no hub (what a server started offline
    loads): the layout the fetch wrote is llama.cpp's."""
    server = find_llama_server()
    env = llama_env(server) | hub_environment(cache) | {"LLAMA_ARG_OFFLINE": "1"}
    done = subprocess.run([str(server.parent / "llama"), "download", "-hf", str(ref)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().strip().splitlines()[-1]


def test_four_make_models_together_on_an_empty_cache_download_each_file_once(
    tmp_path: Path, child_processes: None
) -> None:
    model = model_file(tmp_path / "model.gguf", seed=1)
    cache = tmp_path / "cache"
    with HubStandIn([HubFile(repo, name, model) for repo, name in DEFAULT_FILES.items()], bytes_per_s=500_000) as hub:
        env = dict(os.environ, MODEL_ENDPOINT=hub.url, MODEL_CACHE=str(cache))
        command = [sys.executable, "-m", "bench", "models"]
        started = [
            subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)
        ]
        errors = [process.communicate(timeout=300)[1] for process in started]
        assert [process.returncode for process in started] == [0, 0, 0, 0], errors
        assert sorted(hub.downloads.values()) == [1, 1], hub.downloads  # one download per file, for all four
    assert any(f"waiting for the fetch of {next(iter(DEFAULT_FILES))}" in error for error in errors), errors
    for repo in DEFAULT_FILES:
        found = cached_model(cache, HubRef(repo))
        assert found is not None and sha256(found) == sha256(model)
        assert llama_finds_offline(cache, HubRef(repo)) == str(found)
    assert not (cache / ".fetching").exists() or not any((cache / ".fetching").iterdir())


@pytest.mark.parametrize("bad", ["corrupted", "short"])
def test_a_bad_download_is_refused_and_never_replaces_the_cached_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    q8, q4 = model_file(tmp_path / Q8_FILE, seed=1), model_file(tmp_path / Q4_FILE, seed=2)
    served = tmp_path / "served.gguf"
    data = bytearray(q4.read_bytes())
    data[len(data) // 2] ^= 0xFF
    served.write_bytes(bytes(data) if bad == "corrupted" else bytes(data[: len(data) // 3]))
    cache = tmp_path / "cache"
    refs_main = cache / Q8.folder / "refs" / "main"
    with HubStandIn([HubFile(REPO, Q8_FILE, q8), HubFile(REPO, Q4_FILE, q4)]) as hub:
        monkeypatch.setenv("MODEL_ENDPOINT", hub.url)
        kept = fetch(Q8, cache)
        first_commit = refs_main.read_text()
        hub.revision = "2"  # the hub moved on, and its new file arrives damaged
        hub.files[(REPO, Q4_FILE)] = HubFile(REPO, Q4_FILE, q4, served=served)
        with pytest.raises(PrerequisiteError) as refused:
            fetch(Q4, cache)
        line = str(refused.value)
        assert "\n" not in line and f"{Q4}: the download of {Q4_FILE} is corrupted or cut short" in line, line
        assert "was not put in" in line and "`make models`" in line
        # The cache is as it was: its ref, its good file; nothing of the bad download in it.
        assert refs_main.read_text() == first_commit and cached_model(cache, Q8) == kept
        assert sha256(kept) == sha256(q8) and cached_model(cache, Q4) is None
        assert sorted(p.name for p in (cache / Q8.folder / "blobs").iterdir()) == [sha256(q8)]
        hub.files[(REPO, Q4_FILE)] = HubFile(REPO, Q4_FILE, q4)  # served whole again: fetched anew, and kept
        fixed = fetch(Q4, cache)
        assert sha256(fixed) == sha256(q4) and hub.downloads[(REPO, Q4_FILE)] == 2
        assert refs_main.read_text() == hub.commit(REPO)
    assert llama_finds_offline(cache, Q4) == str(fixed)  # the hub gone: llama.cpp loads the checked file


def test_a_corrupted_file_in_the_cache_is_named_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    with HubStandIn([HubFile(REPO, Q8_FILE, model_file(tmp_path / Q8_FILE, seed=1))]) as hub:
        monkeypatch.setenv("MODEL_ENDPOINT", hub.url)
        found = fetch(Q8, cache)
        with open(found, "r+b") as blob:  # a copy damaged after it was fetched (the old unlocked downloads)
            blob.seek(100)
            blob.write(b"\0\0\0\0")
        with pytest.raises(PrerequisiteError, match=r"is corrupted .* remove .* and run `make models`"):
            fetch(Q8, cache)
        assert hub.downloads[(REPO, Q8_FILE)] == 1


class CheckedServers(FakeServers):
    """A worker's pair that, as it starts, finds the image built and its model in the cache."""

    def __init__(self, client: Client, cache: Path) -> None:
        super().__init__()
        self.client, self.cache = client, cache
        self.found: list[bool] = []

    @staticmethod
    def of(factory: Factory) -> CheckedServers:
        pair = factory.sandboxes.servers  # type: ignore[attr-defined]
        assert isinstance(pair, CheckedServers)
        return pair

    def start(self, ctx: int, jeff_ctx: int | None = None) -> Endpoints:
        self.found.append(CUDA_IMAGE in self.client.images.present and cached_model(self.cache, Q8) is not None)
        return super().start(ctx, jeff_ctx)


def test_four_workers_on_an_empty_cache_get_one_image_build_and_one_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, child_processes: None
) -> None:
    builds = count_builds(monkeypatch, tmp_path / "locks")
    client, cache = Client(), tmp_path / "cache"
    gpu = HostGpu("NVIDIA H100 80GB HBM3", True, "nvidia-ctk", ())
    settings = {**SETTINGS, "use_jeff": False, "presets": ["part3"], "ctx": [4096], "reps": 4, "gpu_devices": "all"}
    config = BenchConfig(out=str(tmp_path / "r.csv"), flint_hf=str(Q8), model_cache=str(cache), **settings)  # type: ignore[arg-type]
    workers = worker_configs(config, FakeNvml(CARDS))  # GPU_DEVICES=all on a host of four cards
    with HubStandIn([HubFile(REPO, Q8_FILE, model_file(tmp_path / Q8_FILE, seed=1))], bytes_per_s=2_000_000) as hub:
        monkeypatch.setenv("MODEL_ENDPOINT", hub.url)
        factories = [four_card_factory(worker, client, gpu) for worker in workers]
        rows = Bench(config, factories=factories, checkout=ROOT).run()
    assert len(rows) == 4 and all(row["stop_reason"] == "done" for row in rows), rows
    assert builds == [CUDA_IMAGE]
    assert hub.downloads[(REPO, Q8_FILE)] == 1
    pairs = [CheckedServers.of(factory) for factory in factories]
    # every start of every worker's servers found the image built and the model cached: made before the workers
    assert any(pair.found for pair in pairs) and all(all(pair.found) for pair in pairs), [p.found for p in pairs]


CARDS = [FakeDevice(f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd", [State(used=GIB)]) for i in range(4)]


def four_card_factory(worker: BenchConfig, client: Client, gpu: HostGpu) -> Factory:
    """A worker whose server kind is compose's (its shared step, its image check as its servers are made), with a
    fake pair in place of the containers and a double of the engine."""
    pair = CheckedServers(client, Path(worker.model_cache))

    def make(making: Making) -> CheckedServers:
        ensure_gpu_image(making.docker, making.config.llama_image, making.checkout)  # as compose's servers do
        return pair

    compose = dataclasses.replace(KINDS["compose"], make=make, needs_docker=False)  # the double owns no containers
    fake = Choice("fake", "a test's fakes")
    host = Host(client, gpu)
    return Factory(worker, fake, fake, host, sandboxes=FakeSandboxes(pair), server_kind=compose, checkout=ROOT)
