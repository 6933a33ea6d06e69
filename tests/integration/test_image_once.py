"""An image four workers ask for at once is built once, with the real engine (bench.llama.cpu_image under the lock of
bench.file_lock): a checkout whose Dockerfile differs by a comment gets a tag no image has, four threads ensure it at
once, and the engine's build runs once; the others wait and find it. (The CUDA image takes the same lock in the same
way; its build is counted with a double in tests/bench/servers/test_shared.py.)"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.containers.engine import docker_client
from bench.containers.images import image_exists
from bench.llama import cpu_image
from bench.llama.cpu_image import LLAMA_CPU_DOCKERFILE, ensure_llama_cpu_image, llama_cpu_image

pytestmark = [pytest.mark.docker, pytest.mark.llama]


def test_four_workers_asking_for_a_missing_image_get_one_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "checkout"
    (checkout / LLAMA_CPU_DOCKERFILE).parent.mkdir(parents=True)
    own = f"# {tmp_path.name}: a tag of this test's own\n"
    (checkout / LLAMA_CPU_DOCKERFILE).write_text(own + (ROOT / LLAMA_CPU_DOCKERFILE).read_text())
    client: Any = docker_client()
    tag = llama_cpu_image(checkout)
    assert not image_exists(client, tag)
    builds: list[str] = []
    real_build = cpu_image.build_image

    def counted(**args: Any) -> None:
        builds.append(args["tag"])
        real_build(**args)

    monkeypatch.setattr(cpu_image, "build_image", counted)
    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(ensure_llama_cpu_image(client, checkout))) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        assert got == [tag] * 4 and builds == [tag] and image_exists(client, tag)
    finally:
        if image_exists(client, tag):
            client.images.remove(tag, force=True)
