"""`bench merge`: the results files of a matrix's shards joined into one."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import ROOT
from bench.cli.options import DEFAULT_CONFIG, Subparsers, add_command, csv_list, ctx_flag, settings


def merge(args: argparse.Namespace) -> int:
    from bench.run.merge import command

    matrix = any(getattr(args, name) is not None for name in ("ctx", "presets", "fixtures", "reps"))
    if args.config is None and matrix:
        args.config = DEFAULT_CONFIG
    config = settings(args) if args.config is not None else None
    files = [Path(file) for file in args.files]
    return command(
        paths=files,
        out=Path(args.out),
        config=config,
        require_complete=args.require_complete,
        shards=args.shards,
        keep_extra=args.keep_extra,
        checkout=ROOT,
    )


def add(sub: Subparsers) -> None:
    one = add_command(sub, "merge", merge, "join the results files of a matrix's shards into one file")
    one.add_argument("files", nargs="+", metavar="SHARD.csv", help="e.g. results/m-shard*.csv")
    one.add_argument("--out", required=True, help="the merged results CSV")
    one.add_argument("--config", help="the matrix the shards ran: list the planned runs none delivered")
    ctx_flag(one, "the shards' --ctx, if they were given one")
    one.add_argument("--presets", type=csv_list, help="the shards' --presets, if given")
    one.add_argument("--fixtures", type=csv_list, help="the shards' --fixtures, if given")
    one.add_argument("--reps", type=int, help="the shards' --reps, if given")
    one.add_argument(
        "--require-complete", action="store_true", help="exit 1 when a planned run is missing (needs the matrix)"
    )
    one.add_argument("--shards", type=int, help="how many shards the matrix was split into (default: as most rows say)")
    one.add_argument(
        "--keep-extra", action="store_true", help="keep rows that do not belong to the matrix apart, in OUT-extra.csv"
    )
