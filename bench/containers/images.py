"""Docker images built from docker/, tagged by a hash of their inputs so they are built once and rebuilt on change.

The base image is a build argument: users get the public default (python:3.11-slim-bookworm, debian:bookworm-slim);
a machine without a registry sets AGENTBENCH_BASE_IMAGE to a locally imported Debian image (see .ci/run).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.containers.engine import SANDBOX_UID
from bench.errors import PrerequisiteError

SANDBOX_DOCKERFILE = Path("docker/sandbox.Dockerfile")  # in the checkout, as the files below
# The forwarder (bench/containers/forwarder.py runs it in the sandbox image): the script and the body checks it imports;
# the recording proxy that imports both (bench/containers/recorder.py).
FORWARDER_FILES = (
    Path("docker/forward.py"),
    Path("docker/chat_body.py"),
    Path("docker/record_proxy.py"),
)
SANDBOX_REPO = "agentbench/sandbox"
DEFAULT_SANDBOX_BASE = "python:3.11-slim-bookworm"
DEFAULT_LLAMA_BASE = "debian:bookworm-slim"  # docker/llama-cpu.Dockerfile's (bench/llama/cpu_image.py)


def base_image(default: str) -> str:
    return os.environ.get("AGENTBENCH_BASE_IMAGE") or default


def digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:12]


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if "__pycache__" not in p.parts)


def sandbox_tag(base: str, checkout: Path) -> str:
    """The sandbox image's tag: a hash of its base and of the files of `checkout` (this repository) it holds."""
    agent = [p.relative_to(checkout) for p in _files(checkout / "agent", "*.py")]
    parts = [base.encode(), f"uid={SANDBOX_UID}".encode()]
    parts += [str(p).encode() + (checkout / p).read_bytes() for p in [SANDBOX_DOCKERFILE, *FORWARDER_FILES, *agent]]
    return f"{SANDBOX_REPO}:{digest(parts)}"


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(client: Any, context: Path, dockerfile: Path, tag: str, base: str, **args: str) -> None:
    """Build `tag`; BASE and any further `args` are the Dockerfile's build arguments."""
    import docker.errors

    try:
        client.images.build(
            path=str(context),
            dockerfile=str(dockerfile),
            buildargs={"BASE": base, **args},
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


def ensure_sandbox_image(client: Any, checkout: Path) -> str:
    """The sandbox image for the agent/ sources of `checkout` (this repository), built if missing; returns its tag."""
    base = base_image(DEFAULT_SANDBOX_BASE)
    tag = sandbox_tag(base, checkout)
    if not image_exists(client, tag):
        build_image(
            client=client,
            context=checkout,
            dockerfile=checkout / SANDBOX_DOCKERFILE,
            tag=tag,
            base=base,
            UID=str(SANDBOX_UID),
        )
    return tag
