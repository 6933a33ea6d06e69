"""What the npm agents of this module's kinds share: where their executable lies in the kind's folder (npm's
node_modules under it, bench/agents/install.py), and a start line that reads the task file's text as the agent's
prompt argument."""

from __future__ import annotations

import platform
from collections.abc import Mapping

# $0 the executable, $1 the task file, the rest its flags: the task's text comes last, as the prompt. Its home
# ($HOME, made here: codex refuses a CODEX_HOME that does not exist) is under the run's out folder.
RUN_ON_TASK = 'mkdir -p "$HOME" && exe="$0" && task="$(cat "$1")" && shift && exec "$exe" "$@" "$task"'


def start(executable: str, task_file: str, flags: list[str]) -> list[str]:
    return ["sh", "-c", RUN_ON_TASK, executable, task_file, *flags]


def no_native_build(package: str, targets: Mapping[str, object]) -> str | None:
    """Why an agent whose package ships native executables for Linux `targets` (machine names) cannot run here."""
    if platform.system() != "Linux" or platform.machine().lower() not in targets:
        return f"{package} has no executable for {platform.system()} {platform.machine()}: run it on Linux x86-64"
    return None


def node_too_old(package: str, version: tuple[int, ...] | None, minimum: tuple[int, int]) -> str | None:
    """Why an agent that runs on Node.js `minimum` or newer cannot run on this machine's `version` (None: no node)."""
    wanted = f"{minimum[0]}.{minimum[1]}" if minimum[1] else str(minimum[0])
    if version is None:
        return f"no `node` on PATH: install Node.js {wanted} or newer (Debian 13: apt-get install -y nodejs npm)"
    if version < minimum:
        have = ".".join(map(str, version))
        return f"{package} needs Node.js {wanted} or newer, this machine's is {have}: install a newer nodejs"
    return None
