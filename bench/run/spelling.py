"""Settings in the user's own spelling: `make bench` takes variables (CTX=4096, RESUME=1), `bench run` flags
(--ctx 4096, --resume). The Makefile's bench recipe says which (FROM_MAKE), so that a message names what to type, and
the command that continues an interrupted bench is the one the user would type again."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FROM_MAKE = "BENCH_FROM_MAKE"  # set to 1 by the Makefile's bench recipe
# bench run's flags (by their setting) that make bench takes as variables, in the Makefile's order.
MAKE_VARIABLES = {
    "ctx": "CTX",
    "reps": "REPS",
    "presets": "PRESETS",
    "agents": "AGENTS",
    "fixtures": "FIXTURES",
    "max_steps": "MAX_STEPS",
    "sandbox": "SANDBOX",
    "servers": "SERVERS",
    "out": "OUT",
    "config": "CONFIG",
    "resume": "RESUME",
    "shard": "SHARD",
    "workers": "WORKERS",
    "gpu_devices": "GPU_DEVICES",
    "fixtures_root": "FIXTURES_ROOT",
    "cpu_model": "CPU_MODEL",
    "flint_model": "FLINT_MODEL",
    "flint_hf": "FLINT_HF",
}
# Read from the environment under make (bench/environment.py's names): a command typed again must repeat them.
ENVIRONMENT_SETTINGS = ("FLINT_MODEL", "FLINT_HF", "FLINT_SERVER_ARGS", "JEFF_SERVER_ARGS")


def from_make(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(FROM_MAKE) == "1"


def spelled(setting: str, environ: Mapping[str, str] = os.environ) -> str:
    """`OUT=` under make, `--out` from bench run."""
    if from_make(environ) and setting in MAKE_VARIABLES:
        return f"{MAKE_VARIABLES[setting]}=" if setting != "resume" else "RESUME=1"
    return "--" + setting.replace("_", "-")


def spelled_with(setting: str, value: Any, environ: Mapping[str, str] = os.environ) -> str:
    """`REPS=3` under make, `--reps 3` from bench run."""
    spelling = spelled(setting, environ)
    return f"{spelling}{_text(value)}" if spelling.endswith("=") else f"{spelling} {_text(value)}"


MAKE_OPTIONS = "docs/running.md, Options of make bench"
FLAG = re.compile(r"argument (--[a-z][a-z-]*)(/-\w+)?")


def in_make_terms(message: str, environ: Mapping[str, str] = os.environ) -> str:
    """An argparse error of bench run's flags as make bench's user reads it: `argument --ctx: ...` -> `CTX: ...`."""
    if not from_make(environ):
        return message

    def variable(found: re.Match[str]) -> str:
        setting = found.group(1)[2:].replace("-", "_")
        return MAKE_VARIABLES.get(setting, found.group(0))

    return FLAG.sub(variable, message)


def setting_refused(setting: str, value: Any, reason: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """A value of a setting given to make bench, refused: `WORKERS=-1 is not allowed: ...`; None unless under make."""
    if not from_make(environ) or setting not in MAKE_VARIABLES:
        return None
    return f"{spelled_with(setting, value, environ)} is not allowed: {reason[:1].lower()}{reason[1:]} ({MAKE_OPTIONS})"


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def continue_command(given: Mapping[str, Any], out: Path, environ: Mapping[str, str] = os.environ) -> str:
    """The command that continues this bench: as given, with RESUME=1 (--resume); the results file named unless the
    newest of its matrix is found without it (make bench RESUME=1 without OUT=: bench.run.resume_file)."""
    settings = {name: value for name, value in given.items() if value not in (None, "", False)}
    settings["resume"] = True
    if from_make(environ):
        variables = [f"{name}={environ[name]}" for name in ENVIRONMENT_SETTINGS if environ.get(name)]
        for name, value in settings.items():
            if name in MAKE_VARIABLES:
                variables.append(f"{MAKE_VARIABLES[name]}={'1' if value is True else _text(value)}")
        return "make bench " + " ".join(shlex.quote(variable) for variable in variables)
    settings.setdefault("out", str(out))
    words = ["bench", "run"]
    for name, value in settings.items():
        words += [spelled(name, {})] if value is True else [spelled(name, {}), _text(value)]
    return shlex.join(words)
