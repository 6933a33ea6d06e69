"""Whether the NVIDIA Container Toolkit is here: `docker info` lists an `nvidia` runtime, or its programs are on
PATH. Standard library only, so that the nightly workflow asks it with the system's python3 before any set-up
(.ci/nightly_build.py), as `servers: auto` does (bench.servers.choose)."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

TOOLKIT_PROGRAMS = ("nvidia-container-cli", "nvidia-container-runtime-hook")


def container_toolkit(docker_info: dict[str, Any] | None) -> str:
    """How the NVIDIA Container Toolkit shows itself here, or "" when it does not."""
    runtimes = (docker_info or {}).get("Runtimes") or {}
    if "nvidia" in runtimes:
        return "docker runtime nvidia"
    for program in TOOLKIT_PROGRAMS:
        if shutil.which(program):
            return program
    return ""


def docker_info_cli() -> dict[str, Any] | None:
    """`docker info` through the docker CLI (None when there is none, or no engine answers)."""
    docker = shutil.which("docker")
    if docker is None:
        return None
    try:
        done = subprocess.run([docker, "info", "--format", "{{json .}}"], capture_output=True, text=True, timeout=60)
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return found if isinstance(found, dict) else None
