"""`bench score`: a run folder graded again, or any folder graded against a fixture's hidden tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import ROOT
from bench.cli.options import SANDBOX_METAVAR, Subparsers, add_command, config_flag, root_flag, settings


def score(args: argparse.Namespace) -> int:
    from bench.score.score_command import ScoreOptions, command

    config = settings(args)  # the flags, else bench.yaml's, validated like any setting
    options = ScoreOptions(
        sandbox=config.sandbox,
        run_dir=Path(args.run_dir) if args.run_dir else None,
        fixture=args.fixture,
        repo=Path(args.repo) if args.repo else None,
        out=Path(args.score_out) if args.score_out else None,
        json=args.json,
        fixtures_root=config.fixtures_root,
    )
    return command(options, ROOT)


def add(sub: Subparsers) -> None:
    text = "grade a run directory (results/runs/<run_id>), or any folder against a fixture"
    one = add_command(sub, "score", score, text)
    one.add_argument("run_dir", nargs="?", help="results/runs/<run_id>")
    one.add_argument("--fixture", metavar="NAME", help="with --repo: the fixture whose hidden tests grade the folder")
    one.add_argument("--repo", metavar="DIR", help="with --fixture: the folder to grade, as an agent would leave it")
    one.add_argument(
        "--out",
        dest="score_out",
        metavar="DIR",
        help="where junit.xml and score.json go (default: the run folder, or results/scores/)",
    )
    one.add_argument("--json", action="store_true", help="print one JSON object")
    config_flag(one)
    root_flag(one)
    one.add_argument("--sandbox", metavar=SANDBOX_METAVAR, help="where grading runs (default: as bench run)")
