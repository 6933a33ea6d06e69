"""`bench report RESULTS.csv`: a markdown report with its PNG plots, beside the CSV."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.options import Subparsers, add_command, json_flag, output_folder, skip_bad_rows_flag


def report(args: argparse.Namespace) -> int:
    from bench.analyze.report import command

    out_dir = output_folder(args.out_dir, "--out-dir") if args.out_dir else None
    return command(Path(args.file), out_dir, args.skip_bad_rows, args.json)


def add(sub: Subparsers) -> None:
    one = add_command(sub, "report", report, "markdown report with PNG plots beside a results CSV")
    one.add_argument("file", metavar="RESULTS.csv")
    one.add_argument(
        "--out-dir", help="where to write report.md and the plots (default: <CSV name>-report/ beside the CSV)"
    )
    json_flag(one)
    skip_bad_rows_flag(one)
