"""`bench view RESULTS.csv...`: one self-contained HTML page of results and their runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.options import Subparsers, add_command, output_file, skip_bad_rows_flag


def view(args: argparse.Namespace) -> int:
    from bench.analyze.view import command

    out = output_file(args.out, "--out") if args.out else None
    return command([Path(f) for f in args.files], out, args.skip_bad_rows, args.by)


def add(sub: Subparsers) -> None:
    text = "one self-contained HTML page of results CSVs and their runs, step by step"
    one = add_command(sub, "view", view, text)
    one.add_argument("files", nargs="+", metavar="RESULTS.csv", help="one file, or two (the older first) to compare")
    one.add_argument("--out", help="the HTML file (default: <last CSV name>.html beside it)")
    one.add_argument(
        "--by", metavar="SETTING", help="compare configurations that differ only in SETTING, as compare --by does"
    )
    skip_bad_rows_flag(one)
