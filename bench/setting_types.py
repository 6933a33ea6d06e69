"""The types a setting's value may have, each with its check: the kinds, presets, windows, URLs, devices, sizes.

The settings model (bench/config.py) declares its fields with them; a value that fails a check is one line naming
the key, the value and what is allowed (bench.config.describe).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, Literal, get_args

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from bench.agents.article import PRESETS
from bench.agents.kinds import KINDS as AGENT_KINDS
from bench.server_args import check_owned_flags, parse_server_args

PRESET_NAMES = tuple(PRESETS)
# The kinds, each listed once: bench.sandbox.kinds and bench.servers.kinds build them (tests hold them equal).
SandboxKind = Literal["auto", "docker", "podman", "local"]
ServerKind = Literal["auto", "compose", "embedded", "external"]
SANDBOX_KINDS: tuple[str, ...] = get_args(SandboxKind)
SERVER_KINDS: tuple[str, ...] = get_args(ServerKind)
# Flint's models on a CPU (bench.llama.cpu_models.CPU_MODELS describes each; a test holds the two equal).
CpuModelName = Literal["smollm2", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
CPU_MODEL_NAMES: tuple[str, ...] = get_args(CpuModelName)
MIN_CTX = 256  # below that nothing useful fits
CTX_PAD = 256  # llama-server pads windows to multiples of this
DEFAULT_CTX = 4096  # Flint's and Jeff's window unless asked otherwise (compose.yaml and .env.example agree: tested)


def _known_preset(name: str) -> str:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose from {', '.join(PRESET_NAMES)}")
    return name


def _known_agent(name: str) -> str:
    if name not in AGENT_KINDS:
        raise ValueError(f"unknown agent {name!r}: choose from {', '.join(AGENT_KINDS)} (bench agents lists them)")
    return name


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise ValueError(f"{text!r} is not an http:// or https:// URL")
    return text.rstrip("/")


DEVICE_HINT = "expected a GPU index such as 0 or a UUID such as GPU-5d1f... or MIG-... (nvidia-smi -L)"


def _device(text: str) -> str:
    if not re.fullmatch(r"\d+|GPU-[0-9a-fA-F-]+|MIG-[\w/-]+", text):
        raise ValueError(DEVICE_HINT)
    return text


def _devices_for_people(value: object, handler: ValidatorFunctionWrapHandler) -> object:
    """gpu_devices' own checks, with one message for people instead of one per member of its union."""
    try:
        return handler(value)
    except ValidationError:
        pass
    if not isinstance(value, list):
        raise ValueError("expected all, or a list of GPU indices or UUIDs such as [0, 1] (nvidia-smi -L)") from None
    if not value:
        raise ValueError("name at least one GPU, or leave gpu_devices unset") from None
    for item in value:
        text = _digits_as_text(item)
        if not isinstance(text, str) or not re.fullmatch(r"\d+|GPU-[0-9a-fA-F-]+|MIG-[\w/-]+", text):
            raise ValueError(f"{item!r} is not a GPU: {DEVICE_HINT}") from None
    raise ValueError(DEVICE_HINT) from None


def _shard(text: str) -> str:
    match = re.fullmatch(r"(\d+)/(\d+)", text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError("expected I/N with 1 <= I <= N, e.g. 2/4 (the second of four shards)")
    return f"{int(match[1])}/{int(match[2])}"


def _padded_ctx(ctx: int) -> int:
    # llama-server rounds its window up to a multiple of 256 (src/llama-context.cpp: GGML_PAD(n_ctx, 256)), so any
    # other size would be served larger than asked, and refused only once the server is up (bench.llama.api).
    if ctx % CTX_PAD:
        low = ctx // CTX_PAD * CTX_PAD
        raise ValueError(
            f"llama-server serves windows in multiples of {CTX_PAD}: choose {low or CTX_PAD} or {low + CTX_PAD}"
        )
    return ctx


def window_tokens(value: object) -> object:
    """A window as llama.cpp's users write it: `4k`, `32K` (times 1,024); anything else as given, for the int check."""
    if isinstance(value, str) and (match := re.fullmatch(r"\s*(\d+)\s*[kK]\s*", value)):
        return int(match[1]) * 1024
    return value


SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_bytes(size: str) -> int:
    """A Docker size (`2g`, `512m`, `4096`) in bytes."""
    return int(size.rstrip("bkmgBKMG")) * SIZE_UNITS[size[len(size.rstrip("bkmgBKMG")) :].lower()]


def _at_least_1m(size: str) -> str:
    if size_bytes(size) < 1 << 20:
        raise ValueError("must be at least 1m")
    return size


def _digits_as_text(value: object) -> object:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _arguments(value: object) -> object:
    """A shell-like line (the command line, make, the environment, a bench.yaml string) split as a shell would; the
    numbers of a YAML list as the text llama-server reads."""
    if isinstance(value, str):
        return parse_server_args(value)
    if isinstance(value, list):
        return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
    return value


def _users_own(args: list[str], role: str) -> list[str]:
    check_owned_flags(args, role)
    return args


Preset = Annotated[str, AfterValidator(_known_preset)]
AgentName = Annotated[str, AfterValidator(_known_agent)]
Ctx = Annotated[int, Field(ge=MIN_CTX, le=1 << 20), BeforeValidator(window_tokens), AfterValidator(_padded_ctx)]
Names = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]
Url = Annotated[str, AfterValidator(_url)]
Seconds = Annotated[float, Field(gt=0, le=7 * 24 * 3600)]
# `gpu_device: 0` in YAML is an int; the device is a name (index or UUID) everywhere else.
Device = Annotated[str, BeforeValidator(_digits_as_text), AfterValidator(_device)]
# `all`, or one worker per card named; a wrong value gets one message (not pydantic's one per member of the union).
GpuDevices = Annotated[
    Literal["all"] | Annotated[list[Device], Field(min_length=1)] | None, WrapValidator(_devices_for_people)
]
DockerSize = Annotated[str, Field(pattern=r"^\d+[bkmgBKMG]?$")]
SpaceSize = Annotated[DockerSize, AfterValidator(_at_least_1m)]
# What llama-server -hf takes: OWNER/REPO[:QUANT] (bench.llama.hub reads it); "" for none.
HubReference = Annotated[str, Field(pattern=r"^$|^[\w][\w.-]*/[\w][\w.-]*(:\w+)?$")]
Shard = Annotated[str, AfterValidator(_shard)]
# llama-server flags of the user's own, for one role's servers: none of those the bench passes (bench.server_args).
FlintServerArgs = Annotated[list[str], BeforeValidator(_arguments), AfterValidator(partial(_users_own, role="flint"))]
JeffServerArgs = Annotated[list[str], BeforeValidator(_arguments), AfterValidator(partial(_users_own, role="jeff"))]
