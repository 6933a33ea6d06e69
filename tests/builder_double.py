"""A double of the Docker client's image store and of the CUDA image's builder: the builds a test caused, counted
(bench.llama.cuda_image.build_cuda_image is replaced; each build takes a while, as a real one does)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from bench import file_lock
from bench.llama import cuda_image


class Images:
    """The engine's images: a tag is there once the builder double made it."""

    def __init__(self) -> None:
        self.present: set[str] = set()

    def get(self, tag: str) -> Any:
        import docker.errors

        if tag not in self.present:
            raise docker.errors.ImageNotFound(tag)
        return object()


class Client:
    def __init__(self) -> None:
        self.images = Images()


def count_builds(monkeypatch: pytest.MonkeyPatch, lock_home: Path) -> list[str]:
    """The tags built from now on (the list grows); the build lock files go under `lock_home`."""
    monkeypatch.setattr(file_lock, "locks_folder", lambda: lock_home)
    made: list[str] = []

    def build(client: Client, checkout: Path, tag: str, **_: Any) -> str:
        made.append(tag)
        time.sleep(0.3)
        client.images.present.add(tag)
        return tag

    monkeypatch.setattr(cuda_image, "build_cuda_image", build)
    return made
