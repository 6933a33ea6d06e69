"""The sandbox kinds, by the name `sandbox:` takes, and what `sandbox: auto` picks.

A new kind is one module with a class like DockerSandboxes (bench.sandbox.base.Sandboxes) and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.config import BenchConfig, Choice
from bench.containers.names import BenchNames
from bench.errors import PrerequisiteError
from bench.sandbox.base import Sandboxes
from bench.sandbox.docker import DockerSandboxes
from bench.sandbox.local import LocalSandboxes
from bench.sandbox.podman import PodmanSandboxes, podman_client

# name -> class(config, names, *, docker=the bench's Docker client or None, checkout=this repository)
KINDS: dict[str, Callable[..., Sandboxes]] = {
    "docker": DockerSandboxes,
    "podman": PodmanSandboxes,
    "local": LocalSandboxes,
}


def choose_sandbox(requested: str, docker: Any) -> Choice:
    """docker, podman or local as asked; `auto` is docker when its engine answers (`docker`, the bench's one probe:
    a client or None), else podman when its API answers, else local."""
    if requested != "auto":
        return Choice(requested, "asked for")
    if docker is not None:
        return Choice("docker", "a Docker engine answers")
    try:
        podman_client().close()
    except PrerequisiteError:
        return Choice("local", "neither a Docker engine nor podman's API answers")
    return Choice("podman", "no Docker engine answers, podman's API does")


def make_sandboxes(
    kind: str, config: BenchConfig, names: BenchNames, docker: Any = None, *, checkout: Path
) -> Sandboxes:
    """The sandboxes of `kind` for one bench; `docker` is the bench's Docker client, when it holds one; `checkout`
    this repository (the sandbox image's files, the recording proxy)."""
    return KINDS[kind](config, names, docker=docker, checkout=checkout)
