"""`python -m agent`: run the coding agent (see agent/cli.py)."""

from __future__ import annotations

import sys

from agent.cli import main

if __name__ == "__main__":
    sys.exit(main())
