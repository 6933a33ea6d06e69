"""`bench predictions score predictions.yaml RESULTS.csv`: predictions written before a bench, hit or miss."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli.options import Subparsers, json_flag, skip_bad_rows_flag, verbosity_flags


def predictions_score(args: argparse.Namespace) -> int:
    from bench.analyze.predictions import command

    return command(Path(args.predictions_file), Path(args.results_file), args.skip_bad_rows, args.json)


def add(sub: Subparsers) -> None:
    group = sub.add_parser("predictions", help="predictions written before a bench").add_subparsers(
        dest="predictions_command", required=True
    )
    one = group.add_parser("score", help="hit or miss for each prediction, with the numbers")
    one.set_defaults(function=predictions_score)
    verbosity_flags(one)
    one.add_argument("predictions_file", metavar="predictions.yaml")
    one.add_argument("results_file", metavar="RESULTS.csv")
    json_flag(one)
    skip_bad_rows_flag(one)
