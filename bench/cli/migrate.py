"""`bench migrate OLD.csv`: a results file of an older bench rewritten under the current columns."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.options import Subparsers, add_command


def migrate(args: argparse.Namespace) -> int:
    from bench.results.migrate import command

    return command(Path(args.file))


def add(sub: Subparsers) -> None:
    one = add_command(sub, "migrate", migrate, "rewrite a results CSV of an older bench under the current columns")
    one.add_argument("file", metavar="OLD.csv")
