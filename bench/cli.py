"""`python -m bench <command>`: parse arguments, call the module that does the work, print one line on errors.

Each command lives in its own module as `command(args) -> exit status`; this file only wires them up.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from bench.errors import BenchError
from bench.logs import configure_logging

log = logging.getLogger(__name__)


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in _csv_list(text)]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from e


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more diagnostics on stderr (debug)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="only warnings and errors on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the agent on each fixture and append one row per run to a results CSV")
    run.add_argument("--config", default="bench.yaml", help="matrix and settings (default: bench.yaml)")
    run.add_argument("--ctx", type=_int_list, help="context sizes, e.g. 4096,8192")
    run.add_argument("--presets", type=_csv_list, help="agent presets, e.g. part2,part3")
    run.add_argument("--fixtures", type=_csv_list, help="fixture names, e.g. todo_repo")
    run.add_argument("--reps", type=int, help="runs per (fixture, preset, ctx)")
    run.add_argument("--max-steps", type=int, help="step limit per run (default: the fixture's)")
    run.add_argument("--sandbox", choices=["auto", "docker", "local"])
    run.add_argument("--servers", choices=["auto", "compose", "embedded", "external"])
    run.add_argument("--out", help="results CSV (default: results/<date>-<sha>.csv)")
    run.add_argument("--resume", action="store_true", help="skip runs already in --out with the same inputs")
    run.add_argument("--flint-url", help="with --servers external: Flint's URL (default $FLINT_URL)")
    run.add_argument("--jeff-url", help="with --servers external: Jeff's URL (default $JEFF_URL; none: no Jeff)")
    run.set_defaults(module="bench.run.runner")

    up = sub.add_parser("up", help="start Flint and Jeff with compose (GPU, else CPU) and leave them running")
    up.add_argument("--config", default="bench.yaml")
    up.add_argument("--ctx", type=int, default=4096)
    up.set_defaults(module="bench.servers.updown")
    down = sub.add_parser("down", help="stop what `up` started")
    down.add_argument("--config", default="bench.yaml")
    down.set_defaults(module="bench.servers.updown")
    models = sub.add_parser("models", help="fetch the configured hub models into the shared cache ahead of time")
    models.add_argument("--config", default="bench.yaml")
    models.set_defaults(module="bench.servers.fetch")
    gpu_check = sub.add_parser("gpu-check", help="once per GPU host: NVML, the sampler, compose, one real run")
    gpu_check.add_argument("--config", default="bench.yaml")
    gpu_check.add_argument("--ctx", type=int, default=4096, help="context size of the real run (default 4096)")
    gpu_check.set_defaults(module="bench.gpu_check")
    gpu_image = sub.add_parser("gpu-image", help="build the CUDA llama-server image from the pinned source, once")
    gpu_image.set_defaults(module="bench.servers.cuda_image")

    compare = sub.add_parser("compare", help="compare results CSVs group by group, with exact tests")
    compare.add_argument("files", nargs="+", metavar="RESULTS.csv", help="the older file first")
    compare.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="METRIC[:PCT]",
        help="exit 1 when METRIC got worse by more than PCT and significantly (repeatable); `infra` for infra_error",
    )
    compare.add_argument("--alpha", type=float, default=0.05, help="significance level of tests and gates (0.05)")
    compare.add_argument(
        "--pool-last",
        type=int,
        default=0,
        metavar="K",
        help="compare the last file with the runs of the K most recent earlier files of each configuration",
    )
    compare.set_defaults(module="bench.analyze.compare")

    history = sub.add_parser("history", help="results files lined up by date: series, change points, plots")
    history.add_argument("files", nargs="+", metavar="RESULTS.csv", help="e.g. results/nightly-*.csv")
    history.add_argument(
        "--metric", action="append", help="completed, wall_s, ... (repeatable; default: the main ones)"
    )
    history.add_argument("--alpha", type=float, default=0.01, help="significance level of each change point (0.01)")
    history.add_argument("--out-dir", help="where to write history.md and its plots (default: history-report/ beside)")
    history.set_defaults(module="bench.analyze.history")

    report = sub.add_parser("report", help="markdown report with PNG plots beside a results CSV")
    report.add_argument("file", metavar="RESULTS.csv")
    report.add_argument(
        "--out-dir", help="where to write report.md and the plots (default: <CSV name>-report/ beside the CSV)"
    )
    report.set_defaults(module="bench.analyze.report")

    migrate = sub.add_parser("migrate", help="rewrite a results CSV of an older bench under the current columns")
    migrate.add_argument("file", metavar="OLD.csv")
    migrate.set_defaults(module="bench.results.migrate")

    fixtures = sub.add_parser("fixtures", help="fixture tools")
    fixtures_sub = fixtures.add_subparsers(dest="fixtures_command", required=True)
    check = fixtures_sub.add_parser("check", help="verify every fixture against its hidden tests and solution")
    check.add_argument("names", nargs="*", help="fixture names (default: all)")
    check.set_defaults(module="bench.score.check")

    score = sub.add_parser("score", help="grade one run directory (results/runs/<run_id>)")
    score.add_argument("run_dir")
    score.add_argument("--sandbox", choices=["auto", "docker", "local"], default="auto")
    score.set_defaults(module="bench.score.grading")

    predictions = sub.add_parser("predictions", help="predictions written before a bench")
    predictions_sub = predictions.add_subparsers(dest="predictions_command", required=True)
    pscore = predictions_sub.add_parser("score", help="hit or miss for each prediction, with the numbers")
    pscore.add_argument("predictions_file", metavar="predictions.yaml")
    pscore.add_argument("results_file", metavar="RESULTS.csv")
    pscore.set_defaults(module="bench.analyze.predictions")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose - args.quiet)
    try:
        module = importlib.import_module(args.module)
        return int(module.command(args))
    except BenchError as e:
        log.error("%s", e)
        return 2
    except BrokenPipeError:  # `python -m bench compare ... | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        log.warning("interrupted; rows already written are kept")
        return 130
