"""`make gpu-check`'s kernel check against the real Docker engine and a real llama-server image: the CPU image of
this machine's build stands in for the CUDA one (no GPU here; the GPU day's script runs it on a card). A tiny model
it loads and completes on counts as run; a model file that is not a GGUF makes the server exit while loading, which
is the failure with the line of its log that says so, seen in seconds rather than at the timeout."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.containers.engine import LABEL, docker_client
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.llama.kernel_check import run_kernel
from bench.rehearsal.tiny_model import write_tiny_model

pytestmark = [pytest.mark.docker, pytest.mark.llama]
ROOT = Path(__file__).resolve().parents[2]


def test_a_loaded_model_completes_and_a_file_that_is_not_a_gguf_fails_at_once(tmp_path: Path) -> None:
    client = docker_client()
    image = ensure_llama_cpu_image(client, ROOT)
    good = run_kernel(client, image, write_tiny_model(tmp_path / "tiny.gguf"), None, timeout_s=120)
    assert good.ran and good.detail.startswith("loaded with every layer offloaded and predicted 4 tokens"), good
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all" * 64)
    started = time.monotonic()
    failed = run_kernel(client, image, bad, None, timeout_s=120)
    assert not failed.ran and time.monotonic() - started < 30
    assert failed.detail.startswith("exited with status 1 while loading: ") and "\n" not in failed.detail, failed
    left = client.containers.list(all=True, filters={"label": f"{LABEL}=kernel-check", "ancestor": image})
    assert left == []  # each check removes its container
