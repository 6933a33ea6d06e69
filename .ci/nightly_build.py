#!/usr/bin/env python3
"""The nightly's llama.cpp build, chosen before any make: GPU_BUILD=cuda or cpu as asked (the gpu_build input, or
the repository variable GPU_BUILD), else `auto`: a host CUDA build only where the servers will run on the host.

With the NVIDIA Container Toolkit, `servers: auto` runs the servers under compose from the CUDA image, so a host
CUDA build would be unused: cpu (the bench's own CPU stack). Without it, the servers are host processes: cuda. The
choice and its reason are printed in the log, and written to $GITHUB_ENV for every later step. Runs with the
system's python3 (no .venv yet on a fresh checkout): it imports only the standard library and the bench's
bench/containers/nvidia_toolkit.py.

Usage: python3 .ci/nightly_build.py        (reads GPU_BUILD, writes GPU_BUILD to $GITHUB_ENV when set)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.containers.nvidia_toolkit import container_toolkit, docker_info_cli  # noqa: E402

BUILDS = ("auto", "cuda", "cpu")


def choose(asked: str) -> tuple[str, str]:
    """(build, why) for GPU_BUILD=`asked`."""
    if asked in ("cuda", "cpu"):
        return asked, "asked for (the gpu_build input or the repository variable GPU_BUILD)"
    toolkit = container_toolkit(docker_info_cli())
    if toolkit:
        return (
            "cpu",
            f"the NVIDIA Container Toolkit is here ({toolkit}): the servers run under compose from the CUDA image",
        )
    return "cuda", "no NVIDIA Container Toolkit here: the servers run on the host, from a CUDA build of llama.cpp"


def main() -> int:
    asked = os.environ.get("GPU_BUILD", "auto") or "auto"
    if asked not in BUILDS:
        print(f"GPU_BUILD={asked} is not a build: choose {', '.join(BUILDS)}", file=sys.stderr)
        return 2
    build, why = choose(asked)
    print(f"llama.cpp build: {build} ({why})")
    target = os.environ.get("GITHUB_ENV")
    if target:
        with open(target, "a") as env:
            env.write(f"GPU_BUILD={build}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
