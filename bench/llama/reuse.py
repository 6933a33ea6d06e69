"""The llama-server settings that decide what its prompt cache can reuse and how big its KV cache is, read from how
Flint was started, and from what its log says when it says it.

--swa-full (a full-size cache for sliding-window attention), --ctx-checkpoints (states saved along the prompt, so
that a sliding-window model can go back to one), --checkpoint-min-step (the least spacing of two checkpoints),
--cache-reuse (chunks reused by shifting the cache), --cache-ram (a host-RAM cache of whole prompts),
--cache-idle-slots (idle slots saved to that cache when another task comes), the K and V cache types (-ctk, -ctv)
and flash attention (-fa). Each can come from the command line or its LLAMA_ARG_* variable (the command line wins,
as in llama-server); an unset one has the pinned build's default (`llama-server --help` of b11434). Read from the
server's own process (embedded servers) or container (compose); someone else's servers: not known. From -lv 4 on,
the server's startup log also says which attention it chose (`auto` resolved) and the cache types it made: those
win where the log has them. (b11434's /props reports none of these settings: its `default_generation_settings` has
no cache fields.)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.containers.engine import docker_client
from bench.errors import PrerequisiteError
from bench.results.row import ResultRow
from bench.server_args import flag_name

# flag spellings -> (setting, env variable); --swa-full takes no value
FLAGS = {
    "--swa-full": ("swa_full", "LLAMA_ARG_SWA_FULL"),
    "-ctxcp": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--ctx-checkpoints": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--swa-checkpoints": ("ctx_checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS"),
    "--cache-reuse": ("cache_reuse", "LLAMA_ARG_CACHE_REUSE"),
    "-cram": ("cache_ram_mib", "LLAMA_ARG_CACHE_RAM"),
    "--cache-ram": ("cache_ram_mib", "LLAMA_ARG_CACHE_RAM"),
    "-cms": ("checkpoint_min_step", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"),
    "--checkpoint-min-step": ("checkpoint_min_step", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT"),
    "--cache-idle-slots": ("cache_idle_slots", "LLAMA_ARG_CACHE_IDLE_SLOTS"),
    "--no-cache-idle-slots": ("cache_idle_slots", "LLAMA_ARG_CACHE_IDLE_SLOTS"),
    "-ctk": ("cache_type_k", "LLAMA_ARG_CACHE_TYPE_K"),
    "--cache-type-k": ("cache_type_k", "LLAMA_ARG_CACHE_TYPE_K"),
    "-ctv": ("cache_type_v", "LLAMA_ARG_CACHE_TYPE_V"),
    "--cache-type-v": ("cache_type_v", "LLAMA_ARG_CACHE_TYPE_V"),
    "-fa": ("flash_attn", "LLAMA_ARG_FLASH_ATTN"),
    "--flash-attn": ("flash_attn", "LLAMA_ARG_FLASH_ATTN"),
}
DEFAULTS: dict[str, Any] = {
    "swa_full": False,
    "ctx_checkpoints": 32,
    "cache_reuse": 0,
    "cache_ram_mib": 8192,
    "cache_type_k": "f16",
    "cache_type_v": "f16",
    "flash_attn": "auto",
    "checkpoint_min_step": 8192,
    "cache_idle_slots": True,
}
SWITCHES = {"--swa-full": True, "--cache-idle-slots": True, "--no-cache-idle-slots": False}  # flags without a value
TEXT_SETTINGS = ("cache_type_k", "cache_type_v", "flash_attn")
# -fa's values as llama-server reads them (common/arg.cpp of b11434 takes on/off/auto and their synonyms)
FLASH = {
    "on": "on",
    "enabled": "on",
    "1": "on",
    "true": "on",
    "off": "off",
    "disabled": "off",
    "0": "off",
    "false": "off",
    "auto": "auto",
}
# -lv 4 and up: `llama_context: flash_attn = auto|enabled|disabled`, then, for auto, which it chose
# (`Flash Attention enabled`; earlier builds: `Flash Attention was auto, set to enabled`); and one
# `llama_kv_cache: size = ... K (q8_0): ... MiB, V (f16): ... MiB` per cache.
FLASH_ASKED = re.compile(r"llama_context: flash_attn\s*=\s*(\w+)")
FLASH_CHOSEN = re.compile(r"Flash Attention (?:was auto, set to )?(enabled|disabled)")
KV_TYPES = re.compile(r"llama_kv_cache: size = .*K \((\w+)\):.*V \((\w+)\):")
ARGS, LOG = "args", "log"  # where the K/V types and flash attention were read (kv_settings_source)


@dataclass(frozen=True)
class ReuseSettings:
    swa_full: bool
    ctx_checkpoints: int
    cache_reuse: int
    cache_ram_mib: int
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    flash_attn: str = "auto"  # on | off | auto (asked for; the log says what auto chose)
    source: str = ARGS
    checkpoint_min_step: int = 8192
    cache_idle_slots: bool = True

    def fill(self, row: ResultRow) -> None:
        row.swa_full, row.ctx_checkpoints = self.swa_full, self.ctx_checkpoints
        row.cache_reuse, row.cache_ram_mib = self.cache_reuse, self.cache_ram_mib
        row.cache_type_k, row.cache_type_v, row.flash_attn = self.cache_type_k, self.cache_type_v, self.flash_attn
        row.kv_settings_source = self.source
        row.checkpoint_min_step, row.cache_idle_slots = self.checkpoint_min_step, self.cache_idle_slots

    def as_reported(self, said: Mapping[str, str]) -> ReuseSettings:
        """These settings with the K/V types and flash attention a server's log reported (`reported`), when it
        reported all three; else unchanged."""
        if any(name not in said for name in TEXT_SETTINGS):
            return self
        k, v, flash = (said[name] for name in TEXT_SETTINGS)
        return dataclasses.replace(self, cache_type_k=k, cache_type_v=v, flash_attn=flash, source=LOG)


def reported(log: str) -> dict[str, str]:
    """What a server's log says of its attention and KV cache types (the last start's); {} when it says nothing."""
    said: dict[str, str] = {}
    asked, chosen, types = FLASH_ASKED.findall(log), FLASH_CHOSEN.findall(log), KV_TYPES.findall(log)
    if asked:
        flash = FLASH.get(asked[-1].lower(), asked[-1].lower())
        said["flash_attn"] = FLASH[chosen[-1].lower()] if flash == "auto" and chosen else flash
    if types:
        said["cache_type_k"], said["cache_type_v"] = (kind.lower() for kind in types[-1])
    return said


def from_command(args: Sequence[str], env: Mapping[str, str] | None = None) -> ReuseSettings:
    """The settings of a llama-server started with `args` (the program's own arguments) in environment `env`."""
    values = dict(DEFAULTS)
    for flag, (name, variable) in FLAGS.items():
        if env and variable in env and flag.startswith("--"):
            values[name] = _value(name, env[variable])
    for i, arg in enumerate(args):
        flag, inline = flag_name(arg), arg.partition("=")[2]
        if flag not in FLAGS:
            continue
        name = FLAGS[flag][0]
        if flag in SWITCHES:
            values[name] = SWITCHES[flag]
        elif inline or i + 1 < len(args):
            values[name] = _value(name, inline or args[i + 1])
    return ReuseSettings(**values)


def _value(name: str, text: str) -> bool | int | str:
    if name in ("swa_full", "cache_idle_slots"):
        return text.strip().lower() in ("1", "true", "on", "yes", "enabled")
    if name == "flash_attn":
        return FLASH.get(text.strip().lower(), str(DEFAULTS[name]))
    if name in TEXT_SETTINGS:
        return text.strip().lower()
    try:
        return int(text)
    except ValueError:
        return int(DEFAULTS[name])  # llama-server refuses such a value; a server that runs has the default


Command = tuple[list[str], dict[str, str]]  # a llama-server's own arguments and its environment


def process_command(pid: int) -> Command | None:
    """A host process's arguments and environment, from /proc; None when they cannot be read."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    env = dict(item.decode(errors="replace").partition("=")[::2] for item in environ if b"=" in item)
    return [a.decode(errors="replace") for a in args[1:] if a], env


def container_command(client: Any, container_id: str) -> Command | None:
    """A container's entrypoint arguments and environment; None when they cannot be read."""
    try:
        config = client.api.inspect_container(container_id)
    except Exception:  # the engine or the container is gone: not known
        return None
    args = list(config.get("Args") or [])
    return args, dict(item.partition("=")[::2] for item in (config.get("Config") or {}).get("Env") or [])


def server_command(pid: int | None, container: str | None) -> Command | None:
    """How a server the bench started was started: its host process's or its container's; None for others."""
    if pid:
        return process_command(pid)
    if container:
        try:
            return container_command(docker_client(), container)
        except PrerequisiteError:
            return None
    return None


def of_process(pid: int) -> ReuseSettings | None:
    """The settings of a host process's llama-server, from /proc; None when they cannot be read."""
    command = process_command(pid)
    return from_command(*command) if command else None


def of_container(client: Any, container_id: str) -> ReuseSettings | None:
    """The settings of a llama-server container (its entrypoint's arguments and environment); None when unknown."""
    command = container_command(client, container_id)
    return from_command(*command) if command else None


def of_server(pid: int | None, container: str | None, said: Mapping[str, str] | None = None) -> ReuseSettings | None:
    """A server's settings, from its host process or its container, with what its log `said` (`reported`); None for
    servers the bench did not start."""
    command = server_command(pid, container)
    return from_command(*command).as_reported(said or {}) if command else None
