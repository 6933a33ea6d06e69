"""The sandbox image of an agent kind with packages of its own (docker/agent.Dockerfile): the sandbox image and, in
/opt/agents/<name>, the kind's pinned packages, installed offline from wheels fetched on this host (pip download,
through this machine's pip configuration), tagged by the sandbox image and the requirement."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.containers.images import build_image, digest, image_exists
from bench.errors import PrerequisiteError

AGENT_DOCKERFILE = Path("docker/agent.Dockerfile")  # in the checkout
AGENT_REPO = "agentbench/agent"
DOWNLOAD_TIMEOUT_S = 1800
log = logging.getLogger(__name__)


def agent_home(name: str) -> str:
    """Where the kind's packages are in its image (put on PYTHONPATH, its scripts in bin/)."""
    return f"/opt/agents/{name}"


def agent_tag(sandbox_image: str, name: str, requirements: tuple[str, ...], checkout: Path) -> str:
    dockerfile = (checkout / AGENT_DOCKERFILE).read_bytes()
    parts = [sandbox_image.encode(), name.encode(), *(r.encode() for r in requirements), dockerfile]
    return f"{AGENT_REPO}-{name}:{digest(parts)}"


def ensure_agent_image(
    client: Any, sandbox_image: str, name: str, requirements: tuple[str, ...], checkout: Path
) -> str:
    """The image of agent `name` on `sandbox_image` (by `checkout`'s Dockerfile), built if missing; returns its tag."""
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
            client, context, context / "Dockerfile", tag, sandbox_image, NAME=name, REQUIREMENTS=" ".join(requirements)
        )
    return tag
