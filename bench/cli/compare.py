"""`bench compare OLD.csv NEW.csv`: results compared group by group, with exact tests; gates for CI."""

from __future__ import annotations

import argparse

from bench.cli.options import Subparsers, add_command, json_flag, skip_bad_rows_flag


def compare(args: argparse.Namespace) -> int:
    from bench.analyze.compare import CompareOptions, command

    options = CompareOptions(
        files=args.files,
        fail_on=args.fail_on,
        alpha=args.alpha,
        pool_last=args.pool_last,
        strict=args.strict,
        skip_bad_rows=args.skip_bad_rows,
        by=args.by,
        json=args.json,
    )
    return command(options)


def add(sub: Subparsers) -> None:
    one = add_command(sub, "compare", compare, "compare results CSVs group by group, with exact tests")
    one.add_argument("files", nargs="+", metavar="RESULTS.csv", help="the older file first")
    one.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="METRIC[:PCT]",
        help="exit 1 when METRIC got worse by more than PCT and significantly (repeatable); `infra` for infra_error",
    )
    one.add_argument("--alpha", type=float, default=0.05, help="significance level of tests and gates (0.05)")
    one.add_argument(
        "--pool-last",
        type=int,
        default=0,
        metavar="K",
        help="compare the last file with the runs of the K most recent earlier files of each configuration",
    )
    one.add_argument(
        "--strict",
        action="store_true",
        help="a gate with nothing to compare (no baseline of the configuration, a metric not measured) fails",
    )
    one.add_argument(
        "--by",
        metavar="SETTING",
        help="compare configurations that differ only in SETTING (preset, ctx, max_steps, ...), in one file or across",
    )
    json_flag(one)
    skip_bad_rows_flag(one)
