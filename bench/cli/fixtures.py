"""`bench fixtures check|import`: every fixture verified against its hidden tests and solution; exercism exercises
written as fixtures."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import ROOT
from bench.cli.options import (
    SANDBOX_METAVAR,
    Subparsers,
    config_flag,
    ctx_flag,
    json_flag,
    root_flag,
    settings,
    verbosity_flags,
)
from bench.setting_types import SANDBOX_KINDS


def fixtures_check(args: argparse.Namespace) -> int:
    from bench.score.check import command

    return command(args.names, settings(args), args.json, checkout=ROOT)


def fixtures_import(args: argparse.Namespace) -> int:
    from bench.score.exercism import command

    sources = [Path(s) for s in args.sources]
    return command(
        sources=sources,
        into=Path(args.into),
        visible=args.visible,
        max_steps=args.max_steps,
        force=args.force,
        sandbox=args.sandbox,
        checkout=ROOT,
    )


def add(sub: Subparsers) -> None:
    group = sub.add_parser("fixtures", help="fixture tools").add_subparsers(dest="fixtures_command", required=True)
    one = group.add_parser("check", help="verify every fixture against its hidden tests and solution")
    one.set_defaults(function=fixtures_check)
    verbosity_flags(one)
    one.add_argument("names", nargs="*", help="fixture names (default: all)")
    config_flag(one)
    root_flag(one)
    ctx_flag(one, "windows the task must fit (default: the settings')")
    one.add_argument("--flint-url", help="a llama-server whose tokenizer measures the task (default $FLINT_URL)")
    json_flag(one)
    one = group.add_parser("import", help="write fixtures from exercism exercises (a folder of them, or one)")
    one.set_defaults(function=fixtures_import)
    verbosity_flags(one)
    one.add_argument("kind", choices=["exercism"], help="the suite's layout")
    one.add_argument("sources", nargs="+", metavar="SRC", help="an exercise folder, or a folder of exercises")
    one.add_argument("--into", required=True, metavar="DIR", help="the fixtures root written: fixtures/, hidden_tests/")
    one.add_argument(
        "--visible",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of each exercise's tests also given to the agent, read-only (default 0: all hidden)",
    )
    one.add_argument("--max-steps", type=int, default=30, help="the fixtures' step limit (default 30)")
    one.add_argument("--force", action="store_true", help="replace fixtures of the same names in DIR")
    one.add_argument(
        "--sandbox",
        default="auto",
        choices=SANDBOX_KINDS,
        metavar=SANDBOX_METAVAR,
        help="where the stubs and examples are graded (default auto: Docker, else podman; local runs them here)",
    )
