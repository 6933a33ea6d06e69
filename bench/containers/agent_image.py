"""The sandbox image of an agent kind with packages of its own: the sandbox image and, in /opt/agents/<name>, the
kind's pinned packages, tagged by the image they are installed on and the requirement. They go on the sandbox image's
system stage, below the agent's code (bench/containers/images.py: on_system_stage), so that a change to agent/ does not
fetch and install them again. Python ones are installed offline from wheels
fetched on this host (pip download, through this machine's pip configuration: docker/agent.Dockerfile); npm ones are
the node_modules tree installed on this host for the local sandbox (bench/agents/install.py), copied in with this
host's node (docker/agent-npm.Dockerfile)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.agents.base import AgentKind
from bench.agents.install import ensure_installed
from bench.containers.images import build_image, digest, image_exists, on_system_stage
from bench.errors import PrerequisiteError

AGENT_DOCKERFILE = Path("docker/agent.Dockerfile")  # in the checkout
NPM_DOCKERFILE = Path("docker/agent-npm.Dockerfile")
AGENT_REPO = "agentbench/agent"
DOWNLOAD_TIMEOUT_S = 1800
log = logging.getLogger(__name__)


def agent_home(name: str) -> str:
    """Where the kind's packages are in its image (put on PYTHONPATH, its scripts in bin/)."""
    return f"/opt/agents/{name}"


def agent_tag(
    sandbox_image: str, name: str, requirements: tuple[str, ...], checkout: Path, dockerfile: Path = AGENT_DOCKERFILE
) -> str:
    parts = [
        sandbox_image.encode(),
        name.encode(),
        *(r.encode() for r in requirements),
        (checkout / dockerfile).read_bytes(),
    ]
    return f"{AGENT_REPO}-{name}:{digest(parts)}"


def ensure_agent_image(
    client: Any, sandbox_image: str, name: str, requirements: tuple[str, ...], checkout: Path
) -> str:
    """The image of agent `name` on `sandbox_image` (by `checkout`'s Dockerfile), built if missing; returns its tag."""
    return on_system_stage(
        client, sandbox_image, lambda base: _pip_image(client, base, name, requirements, checkout=checkout)
    )


def _pip_image(client: Any, sandbox_image: str, name: str, requirements: tuple[str, ...], *, checkout: Path) -> str:
    tag = agent_tag(sandbox_image, name, requirements, checkout)
    if image_exists(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="agentbench-agent-image-") as tmp:
        context = Path(tmp)
        wheels = context / "wheels"
        log.info("fetching %s and its dependencies for the %s image", " ".join(requirements), name)
        download = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        download += ["--only-binary", ":all:", "-d", str(wheels), "pip", *requirements]
        done = subprocess.run(download, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-400:]
            raise PrerequisiteError(f"could not fetch {' '.join(requirements)} for the {name} image: {tail}")
        shutil.copy(checkout / AGENT_DOCKERFILE, context / "Dockerfile")
        build_image(
            client,
            context,
            context / "Dockerfile",
            tag,
            base=sandbox_image,
            NAME=name,
            REQUIREMENTS=" ".join(requirements),
        )
    return tag


def _link_or_copy(source: str, target: str) -> None:
    source = os.path.realpath(source)  # bin/node: the file itself, not the link to it
    try:
        os.link(source, target)  # the install folder and the build context share the user's cache
    except OSError:
        shutil.copy2(source, target)


def ensure_npm_agent_image(client: Any, sandbox_image: str, kind: AgentKind, checkout: Path) -> str:
    """The image of npm kind `kind` on `sandbox_image`, built if missing from its install on this host."""
    return on_system_stage(client, sandbox_image, lambda base: _npm_image(client, base, kind, checkout))


def _npm_image(client: Any, sandbox_image: str, kind: AgentKind, checkout: Path) -> str:
    tag = agent_tag(sandbox_image, kind.name, kind.install.npm, checkout, dockerfile=NPM_DOCKERFILE)
    if image_exists(client, tag):
        return tag
    installed = ensure_installed(kind)
    with tempfile.TemporaryDirectory(prefix="agentbench-agent-image-", dir=installed.parent) as tmp:
        context = Path(tmp)
        shutil.copytree(installed, context / "packages", copy_function=_link_or_copy)
        shutil.copy(checkout / NPM_DOCKERFILE, context / "Dockerfile")
        build_image(client, context, context / "Dockerfile", tag, base=sandbox_image, NAME=kind.name)
    return tag
