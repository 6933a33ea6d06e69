"""`bench replay RUN_DIR...`: the runs walked again under other clearing policies, counted with Flint's tokenizer."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.options import Subparsers, add_command


def replay(args: argparse.Namespace) -> int:
    from bench.replay.command import ReplayOptions, command

    run_dirs = [Path(d) for d in args.run_dirs]
    return command(ReplayOptions(run_dirs, args.policy or [], args.flint_url, Path(args.csv) if args.csv else None))


def add(sub: Subparsers) -> None:
    one = add_command(sub, "replay", replay, "what other clearing policies would have cost these runs' prompt cache")
    one.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="results/runs/<run_id> folders")
    one.add_argument("--policy", action="append", help="after:H, before:H, lowwater:H:L, none, run (:keep=K)")
    one.add_argument("--flint-url", help="a llama-server with the runs' model and template, to count prompts")
    one.add_argument("--csv", help="also write one line per run and policy to this CSV")
