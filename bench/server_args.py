"""The llama-server flags of a user's own (flint_server_args, jeff_server_args): split as a shell would, and checked
against the flags the bench itself passes, each of which has a setting or a reason of its own.

The spellings are those of the pinned build's `llama-server --help` (b11434). That build reads `--ctx_size` as
`--ctx-size` (a long flag's underscores become dashes) and refuses every `--flag=value` ("invalid argument"), so
both forms are looked at here, and a `=` form is refused before any server starts rather than when one does.
bench.llama's command lines pass exactly these flags (tests/bench/test_server_args.py holds the two together).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from bench.errors import ConfigError

ROLES = ("flint", "jeff")


class ServerArgsError(ConfigError, ValueError):
    """A flag list that cannot be given to llama-server as the user's own (a ValueError, so that the settings model
    reports it under the setting's name; a ConfigError, so that any command prints it in one line)."""


@dataclass(frozen=True)
class Owned:
    """Flags the bench passes itself (their spellings, space-separated): what they set, and what to do instead (per
    role where the roles differ)."""

    flags: str
    sets: str
    instead: str | dict[str, str]
    roles: tuple[str, ...] = ROLES

    def advice(self, role: str) -> str:
        return self.instead if isinstance(self.instead, str) else self.instead[role]


MODEL = {"flint": "set flint_model (a file in models_dir) or flint_hf", "jeff": "set jeff_model or jeff_hf"}
FLINT_TOOLS = (
    "set flint_tools (forced: the bench's template and grammar; fenced: the bench's template for the Qwen CPU models; "
    "native: the model's own), or give a template file of your own with --chat-template-file"
)
OWNED = (
    Owned("-m --model -mu --model-url -dr --docker-repo -hf -hfr --hf-repo -hff --hf-file", "the model", MODEL),
    Owned("-c --ctx-size", "the window", {"flint": "set ctx (--ctx, CTX=)", "jeff": "set jeff_ctx"}),
    Owned("--host", "where the server listens", "the sandbox kind decides it (sandbox)"),
    Owned("--port", "the port", "each server gets a free port of its own"),
    Owned("-np --parallel", "the slots", "one slot owns the whole window; for servers side by side set workers"),
    Owned("-t --threads", "the CPU threads", "set threads"),
    Owned("--metrics", "/metrics", "it is on, for the cross-check of reprocessed tokens"),
    Owned("--slots --no-slots", "/slots", "the bench reads /slots to see that a server is idle"),
    Owned("--slot-save-path", "the slot save path", "the bench empties the slot through it before each run"),
    Owned("-cram --cache-ram", "the host-RAM prompt cache", "it stays 0, so that every run starts with a cold cache"),
    Owned("-ngl --gpu-layers --n-gpu-layers", "the GPU layers", "all go on the GPU (experts to the CPU: --n-cpu-moe)"),
    Owned("-fit --fit", "fitting to memory", "it stays off, so that the window is exactly ctx"),
    Owned("--ui --webui --no-ui --no-webui", "the web UI", "it stays off"),
    Owned("--log-colors --log-disable --log-jsonl --no-log-jsonl", "the log's form", "the bench reads plain log lines"),
    Owned(
        "--jinja --no-jinja --chat-template --grammar --grammar-file -j --json-schema -jf --json-schema-file",
        "how Flint answers",
        FLINT_TOOLS,
        roles=("flint",),
    ),
    Owned("-rea --reasoning", "Jeff's thinking", "it stays off: Jeff answers in one short line", roles=("jeff",)),
)
OWNED_BY_FLAG = {(flag, role): owned for owned in OWNED for flag in owned.flags.split() for role in owned.roles}
# Flags the bench passes in some modes and a user may give in others: Flint's chat template file is the bench's with
# flint_tools forced or fenced, and the user's own beside native (bench/llama/serving.py refuses the two together).
SHARED = {"flint": {"--chat-template-file"}, "jeff": set()}


def parse_server_args(text: str, setting: str = "") -> list[str]:
    """`text` split into arguments as a shell would (quotes keep spaces); ServerArgsError on an open quote. `setting`
    (e.g. "--server-args") starts the error's line when given."""
    try:
        return shlex.split(text)
    except ValueError as e:
        raise ServerArgsError(_line(setting, f"{str(e).lower()} in {text!r}: close the quote")) from None


def flag_name(arg: str) -> str:
    """The flag an argument names as llama-server reads it: a long flag's underscores are dashes, and any `=value`
    left off (`--ctx_size=8` -> `--ctx-size`)."""
    name = arg.partition("=")[0]
    return name.replace("_", "-") if name.startswith("--") else name


def check_owned_flags(args: Sequence[str], role: str, setting: str = "") -> None:
    """Refuses (ServerArgsError, one line) a flag the bench passes itself, naming the setting to use instead, and any
    `--flag=value`, which the pinned llama-server does not take. `setting` starts the error's line when given."""
    for arg in args:
        if not arg.startswith("-") or arg[1:2].isdigit() or arg == "-":
            continue  # a value (a negative number too), not a flag
        owned = OWNED_BY_FLAG.get((flag_name(arg), role))
        if owned is not None:
            raise ServerArgsError(_line(setting, f"{arg} ({owned.sets}) is the bench's own: {owned.advice(role)}"))
        if "=" in arg:
            flag, _, value = arg.partition("=")
            problem = f"{arg}: llama-server takes no --flag=value (it would not start): write {flag} {value}"
            raise ServerArgsError(_line(setting, problem))


def _line(setting: str, problem: str) -> str:
    return f"{setting}: {problem}" if setting else problem


def owned_flags(role: str) -> set[str]:
    """Every spelling the bench owns for `role`."""
    return {flag for flag, owner in OWNED_BY_FLAG if owner == role}


def passed_flags(role: str) -> set[str]:
    """Every spelling the bench may pass itself for `role`: its own, and the ones it shares with the user."""
    return owned_flags(role) | SHARED[role]
