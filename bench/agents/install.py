"""Installing an agent kind's pinned packages for the local sandbox: a folder of its own per kind and version, made
once under the user's cache: a virtual environment with pip, or a node_modules tree with npm, each as this machine
configures it (pip's index and mirrors, npm's registry from its npmrc).

(The docker sandbox installs them into an image of their own instead: bench/containers/agent_image.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.agents.base import AgentKind
from bench.errors import PrerequisiteError

INSTALL_TIMEOUT_S = 1800  # litellm and its dependencies on a slow machine
NPM_HINT = "install Node.js and npm (Debian: apt-get install -y nodejs npm)"


def agents_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentbench" / "agents"


def venv_of(kind: AgentKind) -> Path:
    """Where the kind's packages are installed: one folder per kind and version."""
    return agents_cache() / f"{kind.name}-{kind.version()}"


def packages(kind: AgentKind) -> tuple[str, ...]:
    return kind.install.pip or kind.install.npm


def is_installed(kind: AgentKind) -> bool:
    return not packages(kind) or (venv_of(kind) / ".installed").exists()


def npm_install(folder: Path, npm: tuple[str, ...]) -> list[str]:
    """npm's command that installs `npm` into folder/node_modules, exactly those versions, running no package's
    install script (a kind says which of its files to start: bench/agents/opencode.py)."""
    exe = shutil.which("npm")
    if exe is None:
        raise PrerequisiteError(f"npm not found, needed for {' '.join(npm)}: {NPM_HINT}")
    flags = ["--no-save", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact"]
    return [exe, "install", "--prefix", str(folder), *flags, *npm]


def install_commands(kind: AgentKind, folder: Path) -> list[list[str]]:
    if kind.install.npm:
        return [npm_install(folder, kind.install.npm)]
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    return [[sys.executable, "-m", "venv", "--clear", str(folder)], pip + list(kind.install.pip)]


def ensure_installed(kind: AgentKind) -> Path:
    """The kind's folder, made now if it is not there yet (a half-made one is made again)."""
    venv = venv_of(kind)
    if is_installed(kind):
        return venv
    shutil.rmtree(venv, ignore_errors=True)
    venv.mkdir(parents=True)
    for command in install_commands(kind, venv):
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-400:]
            raise PrerequisiteError(f"installing {kind.name} ({' '.join(packages(kind))}) failed: {tail}")
    node = shutil.which("node")
    if kind.install.npm and node:  # the kind's node, where its image finds it too (docker/agent-npm.Dockerfile)
        (venv / "bin").mkdir(exist_ok=True)
        (venv / "bin" / "node").symlink_to(Path(node).resolve())
    (venv / ".installed").write_text(" ".join(packages(kind)) + "\n")
    return venv
