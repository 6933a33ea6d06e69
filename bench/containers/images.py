"""Docker images built from docker/, tagged by a hash of their inputs so they are built once and rebuilt on change.

The base image is a build argument: users get the public default (python:3.11-slim-bookworm, debian:bookworm-slim);
a machine without a registry sets AGENTBENCH_BASE_IMAGE to a locally imported Debian image (see .ci/run).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable
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
# The sandbox image's system stage (everything but the agent's code), tagged by its own inputs; the sandbox image names
# it and itself in these labels, so that a language's toolchain or an agent's packages go on that stage, installed
# once, and not again each time agent/ changes (on_system_stage).
SYSTEM_REPO = "agentbench/sandbox-system"
SYSTEM_LABEL, SANDBOX_LABEL = "agentbench.system", "agentbench.sandbox"
# What the sandbox image adds to its system stage (docker/sandbox.Dockerfile), copied onto an image made on that stage.
CODE_DOCKERFILE = """\
ARG SANDBOX
ARG BASE
FROM ${SANDBOX} AS sandbox
FROM ${BASE}
COPY --from=sandbox /opt/agentbench /opt/agentbench
"""
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


def system_tag(base: str, checkout: Path) -> str:
    """The system stage's tag: a hash of its base and of the Dockerfile (not of the agent's code)."""
    parts = [base.encode(), f"uid={SANDBOX_UID}".encode(), (checkout / SANDBOX_DOCKERFILE).read_bytes()]
    return f"{SYSTEM_REPO}:{digest(parts)}"


def image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(
    client: Any,
    context: Path,
    dockerfile: Path,
    tag: str,
    base: str,
    *,
    target: str | None = None,
    labels: dict[str, str] | None = None,
    **args: str,
) -> None:
    """Build `tag` (of the Dockerfile's stage `target`, else its last); BASE and any further `args` are the
    Dockerfile's build arguments; `labels` are added to the image's own."""
    import docker.errors

    try:
        client.images.build(
            path=str(context),
            dockerfile=str(dockerfile),
            buildargs={"BASE": base, **args},
            tag=tag,
            rm=True,
            forcerm=True,
            target=target,
            labels={"agentbench.image": "1", **(labels or {})},
        )
    except docker.errors.BuildError as e:
        tail = " | ".join(str(chunk.get("stream", chunk.get("error", ""))).strip() for chunk in e.build_log)[-600:]
        raise PrerequisiteError(
            f"building {tag} from {dockerfile.name} on base {base} failed: {tail}. If the base image cannot be "
            "pulled here, set AGENTBENCH_BASE_IMAGE to a local Debian image with python3 (see .ci/run)"
        ) from e


def ensure_sandbox_image(client: Any, checkout: Path) -> str:
    """The sandbox image for the agent/ sources of `checkout` (this repository), built if missing; returns its tag.
    Its system stage is tagged too (a new agent/ reuses it from the build cache), and named in the image's labels."""
    base = base_image(DEFAULT_SANDBOX_BASE)
    tag, system = sandbox_tag(base, checkout), system_tag(base, checkout)
    if image_exists(client, tag):
        return tag
    build = functools.partial(
        build_image, client, checkout, checkout / SANDBOX_DOCKERFILE, base=base, UID=str(SANDBOX_UID)
    )
    if not image_exists(client, system):
        build(tag=system, target="system")
    build(tag=tag, labels={SYSTEM_LABEL: system, SANDBOX_LABEL: tag})
    return tag


def system_stage(client: Any, sandbox: str) -> str | None:
    """The system stage the sandbox image `sandbox` was built on, where it names one and that image is here."""
    labels = client.images.get(sandbox).labels or {}
    system = labels.get(SYSTEM_LABEL)
    return system if labels.get(SANDBOX_LABEL) == sandbox and system and image_exists(client, system) else None


def on_system_stage(client: Any, sandbox: str, build: Callable[[str], str]) -> str:
    """The image `build` makes (given the image to build on, it returns its tag) on the sandbox image's system stage,
    with the sandbox image's own files copied on top, tagged by both: a new agent/ costs that copy, not `build` again.
    Where `sandbox` names no system stage (an image a test made from the sandbox image), `build` builds on it."""
    system = system_stage(client, sandbox)
    if system is None:
        return build(sandbox)
    below = build(system)
    tag = f"{below.rpartition(':')[0]}-code:{digest([sandbox.encode(), below.encode(), CODE_DOCKERFILE.encode()])}"
    if not image_exists(client, tag):
        with tempfile.TemporaryDirectory(prefix="agentbench-code-layer-") as context:
            (Path(context) / "Dockerfile").write_text(CODE_DOCKERFILE)
            build_image(client, Path(context), Path(context) / "Dockerfile", tag=tag, base=below, SANDBOX=sandbox)
    return tag
