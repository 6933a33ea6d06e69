"""The llama-server settings that decide what its prompt cache can reuse, read from how Flint was started.

--swa-full (a full-size cache for sliding-window attention), --ctx-checkpoints (states saved along the prompt, so
that a sliding-window model can go back to one), --cache-reuse (chunks reused by shifting the cache) and --cache-ram
(a host-RAM cache of whole prompts). Each can come from the command line or its LLAMA_ARG_* variable (the command
line wins, as in llama-server); an unset one has the pinned build's default (common/common.h of b11434). Read from
the server's own process (embedded servers) or container (compose); someone else's servers: not known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.containers.engine import docker_client
from bench.errors import PrerequisiteError
from bench.results.row import ResultRow

# flag spellings -> (setting, env variable); --swa-full takes no value
FLAGS = {
    "--swa-full": ("swa_full", "LLAMA_ARG_SWA_FULL"),
    "-ctxcp": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--ctx-checkpoints": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--swa-checkpoints": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--cache-reuse": ("cache_reuse", "LLAMA_ARG_CACHE_REUSE"),
    "-cram": ("cache_ram_mib", "LLAMA_ARG_CACHE_RAM"),
    "--cache-ram": ("cache_ram_mib", "LLAMA_ARG_CACHE_RAM"),
}
DEFAULTS: dict[str, Any] = {"swa_full": False, "ctx_checkpoints": 32, "cache_reuse": 0, "cache_ram_mib": 8192}


@dataclass(frozen=True)
class ReuseSettings:
    swa_full: bool
    ctx_checkpoints: int
    cache_reuse: int
    cache_ram_mib: int

    def fill(self, row: ResultRow) -> None:
        row.swa_full, row.ctx_checkpoints = self.swa_full, self.ctx_checkpoints
        row.cache_reuse, row.cache_ram_mib = self.cache_reuse, self.cache_ram_mib


def from_command(args: Sequence[str], env: Mapping[str, str] | None = None) -> ReuseSettings:
    """The settings of a llama-server started with `args` (the program's own arguments) in environment `env`."""
    values = dict(DEFAULTS)
    for flag, (name, variable) in FLAGS.items():
        if env and variable in env and flag.startswith("--"):
            values[name] = _value(name, env[variable])
    for i, arg in enumerate(args):
        flag, _, inline = arg.partition("=")
        if flag not in FLAGS:
            continue
        name = FLAGS[flag][0]
        if name == "swa_full":
            values[name] = True
        elif inline or i + 1 < len(args):
            values[name] = _value(name, inline or args[i + 1])
    return ReuseSettings(**values)


def _value(name: str, text: str) -> bool | int:
    if name == "swa_full":
        return text.strip().lower() in ("1", "true", "on", "yes", "enabled")
    try:
        return int(text)
    except ValueError:
        return int(DEFAULTS[name])  # llama-server refuses such a value; a server that runs has the default


def of_process(pid: int) -> ReuseSettings | None:
    """The settings of a host process's llama-server, from /proc; None when they cannot be read."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    env = dict(item.decode(errors="replace").partition("=")[::2] for item in environ if b"=" in item)
    return from_command([a.decode(errors="replace") for a in args[1:] if a], env)


def of_container(client: Any, container_id: str) -> ReuseSettings | None:
    """The settings of a llama-server container (its entrypoint's arguments and environment); None when unknown."""
    try:
        config = client.api.inspect_container(container_id)
    except Exception:  # the engine or the container is gone: not known
        return None
    args = list(config.get("Args") or [])
    env = dict(item.partition("=")[::2] for item in (config.get("Config") or {}).get("Env") or [])
    return from_command(args, env)


def of_server(pid: int | None, container: str | None) -> ReuseSettings | None:
    """A server's settings, from its host process or its container; None for servers the bench did not start."""
    if pid:
        return of_process(pid)
    if container:
        try:
            return of_container(docker_client(), container)
        except PrerequisiteError:
            return None
    return None
