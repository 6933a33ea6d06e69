"""The one YAML reader: bench.yaml, fixture.yaml and predictions.yaml are all read here, and what their models
(pydantic) refuse is told the same way: errors in one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bench.errors import ConfigError


def read_yaml(path: Path, what: str, error: type[Exception] = ConfigError) -> Any:
    """The document in `path`; `error` (a BenchError) with one line naming the file when it cannot be read."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise error(f"cannot read {what} {path}: {e.strerror}; check the path") from None
    except yaml.YAMLError as e:
        raise error(f"{path} is not valid YAML: {str(e).splitlines()[0]}") from None
    except UnicodeDecodeError:
        raise error(f"{path} is not UTF-8 text") from None


def read_mapping(path: Path, what: str, error: type[Exception] = ConfigError) -> dict[str, Any]:
    """A YAML file that must hold a mapping of keys to values (an empty file is an empty mapping)."""
    data = read_yaml(path, what, error)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(f"{path} must hold a mapping of keys to values ({what})")
    return data


# Where pydantic names the member of a union or a validator in an error's location, not a key.
UNION_TAG = re.compile(r"^(float|int|str|bool|none|function-\w+.*|constrained-.*|list\[.*\]|dict\[.*\])$")


def describe(error: ValidationError) -> str:
    """The first problem as `key = value: what is allowed` (one line; the rest follow once this is fixed)."""
    first = error.errors()[0]
    key = ""
    for part in first["loc"]:
        if isinstance(part, int):
            key += f"[{part}]"
        elif not UNION_TAG.match(str(part)):
            key += f".{part}" if key else str(part)
    message = reason(error)
    if first["type"] == "extra_forbidden":
        return f"unknown setting {key!r}"
    if first["type"] == "missing":
        return f"{key} is missing"
    if not key:  # a rule between settings (a model validator): its message says it all
        return message
    return f"{key} = {first.get('input')!r} is not allowed: {message[0].lower()}{message[1:]}"


def reason(error: ValidationError) -> str:
    """What is wrong with the first problem's value, in pydantic's words."""
    return str(error.errors()[0]["msg"]).removeprefix("Value error, ")
