"""What every worker's servers share, made once (bench.servers.shared): the CUDA image is built once however many
threads ask at once (a double of the builder counts the builds; tests/bench/test_file_lock.py holds the lock across
processes), and the kinds that start no servers of their own make nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from builder_double import Client, count_builds

from bench import ROOT
from bench.config import BenchConfig
from bench.llama.cuda_image import CUDA_IMAGE, ensure_gpu_image
from bench.servers.choose import HostGpu
from bench.servers.kinds import KINDS
from bench.servers.shared import Shared


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    return count_builds(monkeypatch, tmp_path)


def test_four_workers_asking_at_once_get_one_build(builds: list[str]) -> None:
    client = Client()
    threads = [threading.Thread(target=ensure_gpu_image, args=(client, CUDA_IMAGE, ROOT)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert builds == [CUDA_IMAGE] and CUDA_IMAGE in client.images.present


def test_compose_on_a_gpu_builds_its_image_once_and_external_makes_nothing(builds: list[str], tmp_path: Path) -> None:
    client = Client()
    gpu = HostGpu("NVIDIA H100 80GB HBM3", True, "nvidia-ctk", ())
    (tmp_path / "model.gguf").write_bytes(
        b"GGUF"
    )  # a local file: nothing to fetch (tests/integration/test_fetch_once.py)
    config = BenchConfig(models_dir=str(tmp_path), flint_model="model.gguf", jeff_model="model.gguf")
    shared = Shared(config, gpu, client, ROOT)
    KINDS["external"].prepare(shared)
    assert builds == []
    for _ in range(2):  # a second bench on this host finds the image
        KINDS["compose"].prepare(shared)
    assert builds == [CUDA_IMAGE]
