"""Installing an agent kind's pinned packages for the local sandbox: a virtual environment of its own per kind and
version, made once under the user's cache, with pip as this machine configures it (its index and mirrors).

(The docker sandbox installs them into an image of their own instead: bench/containers/agent_image.py.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.agents.base import AgentKind
from bench.errors import PrerequisiteError

INSTALL_TIMEOUT_S = 1800  # litellm and its dependencies on a slow machine


def agents_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentbench" / "agents"


def venv_of(kind: AgentKind) -> Path:
    """Where the kind's packages are installed: one folder per kind and version."""
    return agents_cache() / f"{kind.name}-{kind.version()}"


def is_installed(kind: AgentKind) -> bool:
    return not kind.install.pip or (venv_of(kind) / ".installed").exists()


def ensure_installed(kind: AgentKind) -> Path:
    """The kind's environment, made now if it is not there yet (a half-made one is made again)."""
    venv = venv_of(kind)
    if is_installed(kind):
        return venv
    commands = [[sys.executable, "-m", "venv", "--clear", str(venv)]]
    commands.append([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"])
    commands[-1] += list(kind.install.pip)
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-400:]
            raise PrerequisiteError(f"installing {kind.name} ({' '.join(kind.install.pip)}) failed: {tail}")
    (venv / ".installed").write_text(" ".join(kind.install.pip) + "\n")
    return venv
