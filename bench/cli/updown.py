"""`bench up` and `bench down`: compose servers left running for interactive use, and stopped."""

from __future__ import annotations

import argparse

from bench import ROOT
from bench.cli.options import Subparsers, add_command, config_flag, ctx_flag, settings


def up(args: argparse.Namespace) -> int:
    from bench.servers import updown

    return updown.up(settings(args), ROOT)


def down(args: argparse.Namespace) -> int:
    from bench.servers import updown

    return updown.down(settings(args), ROOT)


def add(sub: Subparsers) -> None:
    one = add_command(sub, "up", up, "start Flint and Jeff with compose (GPU, else CPU) and leave them running")
    config_flag(one)
    ctx_flag(one, "Flint's context size (default: the settings' first)")
    config_flag(add_command(sub, "down", down, "stop what `up` started"))
