"""Helpers for the submit tests: `bench submit k8s`'s command line for a matrix of given settings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# Given, as --image is: by default Jeff's image is named by a hash of the installed llama-server (make setup).
JEFF_IMAGE = "r.example/llama-cpu:b1"


def k8s_argv(
    folder: Path,
    settings: str,
    *run: str,
    shards: int = 2,
    image: str = "i:1",
    results: str = "m",
    options: Sequence[str] = (),
) -> list[str]:
    """Submit `shards` shards of `bench run` with the flags `run`, the settings file (its text `settings`) written
    into `folder`, the matrix into `folder / results`; `options` are more of submit's own."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "settings.yaml"
    config.write_text(settings)
    own = ["--shards", str(shards), "--image", image, "--jeff-image", JEFF_IMAGE, "--config", str(config)]
    return ["submit", "k8s", *own, "--results", str(folder / results), *options, "--", *run]
