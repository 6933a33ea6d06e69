"""`bench agents`: every agent kind, with its version, the API it speaks, and whether it can run here (the one line
that says why not)."""

from __future__ import annotations

import argparse

from bench.cli.options import Subparsers, add_command


def agents(args: argparse.Namespace) -> int:
    from bench.agents.kinds import KINDS, listing

    for line in listing(KINDS.values()):
        print(line)
    return 0


def add(sub: Subparsers) -> None:
    add_command(sub, "agents", agents, "list the agent kinds: version, API dialect, and whether each can run here")
