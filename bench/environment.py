"""Settings from the environment: every setting of bench.yaml as AGENTBENCH_<KEY>, and a few older names kept as
aliases (FLINT_URL, JEFF_URL, GPU_DEVICE and the other variables compose.yaml reads).

One rule orders where a setting comes from (bench.config.load_config): the command line, then the environment, then
bench.yaml, then the defaults. A variable's text is read as the setting's type asks: as it is for text, else as
YAML reads it (`8192`, `true`, `[part2, part3]`, `{temperature: 0}`), and a comma list (`4096,8192`) for a list.
An empty variable counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

PREFIX = "AGENTBENCH_"
# The names compose.yaml (and .env.example) and the agent read, which the bench has always taken too.
ALIASES = {
    "flint_url": "FLINT_URL",
    "jeff_url": "JEFF_URL",
    "models_dir": "MODELS_DIR",
    "flint_model": "FLINT_MODEL",
    "jeff_model": "JEFF_MODEL",
    "llama_image": "LLAMA_IMAGE",
    "gpu_device": "GPU_DEVICE",
    "flint_hf": "FLINT_HF",
    "jeff_hf": "JEFF_HF",
    "model_cache": "MODEL_CACHE",
    "cpu_models": "CPU_MODELS",
    "flint_server_args": "FLINT_SERVER_ARGS",
    "jeff_server_args": "JEFF_SERVER_ARGS",
}

# Settings whose variable is one line split as a shell would (bench/server_args.py), not a comma list.
SHELL_LINES = {"flint_server_args", "jeff_server_args"}


@dataclass(frozen=True)
class FromEnvironment:
    """A setting's value taken from the environment, and the variable it came from (for the error that names it)."""

    value: Any
    variable: str


def variables(key: str) -> tuple[str, ...]:
    """The environment names of a setting, the one that wins first: AGENTBENCH_<KEY>, then its alias."""
    return (PREFIX + key.upper(), *([ALIASES[key]] if key in ALIASES else []))


def from_environment(
    fields: Mapping[str, FieldInfo], environ: Mapping[str, str] = os.environ
) -> dict[str, FromEnvironment]:
    """Every setting the environment sets, under the first of its names that is set and not empty."""
    found = {}
    for key, field in fields.items():
        name = next((name for name in variables(key) if environ.get(name)), None)
        if name is not None:
            text = environ[name]
            found[key] = FromEnvironment(text if key in SHELL_LINES else typed(field, text), name)
    return found


def typed(field: FieldInfo, text: str) -> Any:
    """The text as the setting's type takes it: as it is, as YAML, or as a comma list of YAML items; the YAML
    reading when none fits, for the config model to refuse with its message."""
    adapter: TypeAdapter[Any] = TypeAdapter(field.annotation if field.annotation is not None else Any)
    read = _yaml(text)
    for candidate in (text, read, [_yaml(part.strip()) for part in text.split(",")]):
        try:
            adapter.validate_python(candidate, strict=True)
        except ValidationError:
            continue
        return candidate
    return read


def _yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text
