"""`bench history RESULTS.csv...`: results files lined up by date, with change points and plots."""

from __future__ import annotations

import argparse

from bench.cli.options import Subparsers, add_command, json_flag, output_folder, skip_bad_rows_flag


def history(args: argparse.Namespace) -> int:
    from bench.analyze.history import HistoryOptions, command

    out_dir = output_folder(args.out_dir, "--out-dir") if args.out_dir else None
    return command(
        HistoryOptions(
            files=args.files,
            metrics=args.metric or [],
            alpha=args.alpha,
            out_dir=out_dir,
            skip_bad_rows=args.skip_bad_rows,
            json=args.json,
        )
    )


def add(sub: Subparsers) -> None:
    one = add_command(sub, "history", history, "results files lined up by date: series, change points, plots")
    one.add_argument("files", nargs="+", metavar="RESULTS.csv", help="e.g. results/nightly-*.csv")
    one.add_argument("--metric", action="append", help="completed, wall_s, ... (repeatable; default: the main ones)")
    one.add_argument("--alpha", type=float, default=0.01, help="significance level of each change point (0.01)")
    one.add_argument("--out-dir", help="where to write history.md and its plots (default: history-report/ beside)")
    json_flag(one)
    skip_bad_rows_flag(one)
