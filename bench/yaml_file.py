"""The one YAML reader: bench.yaml, fixture.yaml and predictions.yaml are all read here, errors in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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
