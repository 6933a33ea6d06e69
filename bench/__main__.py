"""`python -m bench` and the `bench` command (pyproject.toml's [project.scripts]). A Python without the bench's
dependencies (the system's, before `make setup`) gets one line saying what to run, not a traceback from the first
import (bench.cli.main says the same of the imports a command makes later)."""

from __future__ import annotations

import sys

from bench.errors import missing_dependency


def run() -> int:
    try:
        from bench.cli import main
    except ModuleNotFoundError as e:
        hint = missing_dependency(e, sys.executable)
        if hint is None:
            raise
        print(f"bench: {hint}", file=sys.stderr)
        return 2
    return main()


if __name__ == "__main__":
    sys.exit(run())
