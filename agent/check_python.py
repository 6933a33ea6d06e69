"""The Python the done check runs pytest with, out of reach of everything the model's code can write.

The check runs this very interpreter (sys.executable) as `-I -S -B`: no PYTHON* variable counts (a PYTHONPATH
naming the repository included), no user site, no current folder on the path, no `site` module (so no .pth file,
sitecustomize.py or usercustomize.py is run) and no bytecode files. The check's own code then sets its path to
the one this interpreter has on its own (`-I`), taken once, at the agent's start, before the model has written
anything: the standard library and the site-packages, with what their .pth files added then. So a start-up hook
written later (into the commands' user site, or a site-packages folder the commands can write) never runs in a
check, and pytest is always the interpreter's own, never a `pytest.py` or `pytest/` of the repository.

The check's environment is the agent's without PYTHON* and PYTEST_* variables, but for
PYTEST_DISABLE_PLUGIN_AUTOLOAD, which can only turn plugins off (the checks of part3+, strict and late set it).
"""

from __future__ import annotations

import functools
import importlib.machinery
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ISOLATED_FLAGS = ("-I", "-S", "-B")
KEPT_VARIABLES = frozenset({"PYTEST_DISABLE_PLUGIN_AUTOLOAD"})
PROBE = "import json, sys; print(json.dumps(sys.path))"


class NoCheckPython(Exception):
    """This interpreter cannot tell its own path; the message says why."""


def check_environment() -> dict[str, str]:
    """The agent's environment without what would change how the check's Python or pytest start."""
    dropped = ("PYTHON", "PYTEST_")
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped) or k in KEPT_VARIABLES}


@functools.cache
def interpreter_path() -> tuple[str, ...]:
    """The path this interpreter has on its own: asked of it, isolated, from the root folder (cached: once a run).
    An agent started without `site` (-S) gives its checks none either."""
    flags = ["-I", "-S"] if sys.flags.no_site else ["-I"]
    try:
        done = subprocess.run(
            [sys.executable, *flags, "-c", PROBE],
            cwd="/",
            env=check_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        path = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise NoCheckPython(f"cannot ask {sys.executable} for its path: {e}") from None
    if done.returncode != 0 or not isinstance(path, list):
        raise NoCheckPython(f"{sys.executable} -I could not tell its path (exit {done.returncode})")
    return tuple(p for p in path if isinstance(p, str) and os.path.isabs(p))


def python_command(code: str, arguments: str = "") -> str:
    """A shell command running `code` in the check's Python, with the interpreter's own path; `arguments` are
    shell words already quoted."""
    prologue = f"import sys\nsys.path[:] = {list(interpreter_path())!r}\n"
    words = [sys.executable, *ISOLATED_FLAGS, "-c", prologue + code]
    return f"{shlex.join(words)} {arguments}".rstrip()


def pytest_location() -> Path | None:
    """Where the check's pytest is found on the interpreter's own path, or None."""
    spec = importlib.machinery.PathFinder.find_spec("pytest", list(interpreter_path()))
    return Path(spec.origin) if spec is not None and spec.origin else None
