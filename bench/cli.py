"""`python -m bench <command>`: parse arguments, call the function that does the work, print one line on errors.

Each command is one function below that imports the module doing its work (inside the function, so that a command
loads only what it needs: `bench run` never loads matplotlib). Settings flags are named after the settings
(bench.config.BenchConfig) and become settings in one place, `settings()`, where the config model validates them:
argparse only splits text into lists and numbers.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.config import SANDBOX_KINDS, SERVER_KINDS, SETTINGS, BenchConfig, load_config
from bench.errors import BenchError, ConfigError, Terminated
from bench.logs import configure_logging
from bench.results.disk import disk_error, is_disk_error
from bench.submit.commands import add_parser as add_submit_parser
from bench.submit.commands import run_flags

DEFAULT_CONFIG = "bench.yaml"
log = logging.getLogger(__name__)


def _csv_list(text: str) -> list[str]:
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):  # `--ctx 4096,,8192` is a typo, never "4096 and 8192"
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item: separate the values by single commas")
    return parts


def _int_list(text: str) -> list[int]:
    try:
        return [int(part) for part in _csv_list(text)]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from e


def _devices(text: str) -> str | list[str]:
    return "all" if text.strip() == "all" else _csv_list(text)


def settings(args: argparse.Namespace) -> BenchConfig:
    """The one place flags become settings: the --config file (bench.yaml when there is one), then every flag named
    after a setting that was given, validated by the config model."""
    path = Path(getattr(args, "config", DEFAULT_CONFIG))
    if not path.exists() and str(path) != DEFAULT_CONFIG:
        raise ConfigError(f"config file {path} not found")
    given = {name: value for name in SETTINGS if (value := getattr(args, name, None)) not in (None, "")}
    return load_config(path if path.exists() else None, given)


# The commands: each takes the parsed arguments and returns the exit status.


def run(args: argparse.Namespace) -> int:
    from bench.run.runner import command

    return command(settings(args))


def merge(args: argparse.Namespace) -> int:
    from bench.run.merge import command

    matrix = any(getattr(args, name) is not None for name in ("ctx", "presets", "fixtures", "reps"))
    if args.config is None and matrix:
        args.config = DEFAULT_CONFIG
    config = settings(args) if args.config is not None else None
    return command([Path(file) for file in args.files], Path(args.out), config, args.require_complete)


def up(args: argparse.Namespace) -> int:
    from bench.servers import updown

    return updown.up(settings(args))


def down(args: argparse.Namespace) -> int:
    from bench.servers import updown

    return updown.down(settings(args))


def models(args: argparse.Namespace) -> int:
    from bench.llama.fetch import command

    return command(settings(args))


def gpu_check(args: argparse.Namespace) -> int:
    from bench.gpu_check import command

    return command(settings(args), args.config)


def gpu_image(args: argparse.Namespace) -> int:
    from bench.llama.cuda_image import command

    return command()


def compare(args: argparse.Namespace) -> int:
    from bench.analyze.compare import command

    return command(args)


def history(args: argparse.Namespace) -> int:
    from bench.analyze.history import command

    return command(args)


def report(args: argparse.Namespace) -> int:
    from bench.analyze.report import command

    return command(args)


def replay(args: argparse.Namespace) -> int:
    from bench.replay.command import command

    return command(args)


def migrate(args: argparse.Namespace) -> int:
    from bench.results.migrate import command

    return command(args)


def fixtures_check(args: argparse.Namespace) -> int:
    from bench.score.check import command

    return command(args, settings(args))


def fixtures_import(args: argparse.Namespace) -> int:
    from bench.score.exercism import command

    return command(args)


def score(args: argparse.Namespace) -> int:
    from bench.score.score_command import command

    config = settings(args)  # the flags, else bench.yaml's, validated like any setting
    args.sandbox, args.fixtures_root = config.sandbox, config.fixtures_root
    return command(args)


def view(args: argparse.Namespace) -> int:
    from bench.analyze.view import command

    return command(args)


def predictions_score(args: argparse.Namespace) -> int:
    from bench.analyze.predictions import command

    return command(args)


def submit(args: argparse.Namespace) -> int:
    from bench.submit.commands import command

    # the flags after `--` read as `bench run` reads them: the matrix `bench run` with those flags would run
    return command(args, settings(build_parser().parse_args(["run", "--config", args.config, *run_flags(args)])))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more diagnostics on stderr (debug)")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="only warnings and errors on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, function: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        found = sub.add_parser(name, help=text, description=text)
        found.set_defaults(function=function)
        return found

    def config_flag(found: argparse.ArgumentParser) -> None:
        found.add_argument("--config", default=DEFAULT_CONFIG, help="settings file (default: bench.yaml, if any)")

    def ctx_flag(found: argparse.ArgumentParser, text: str) -> None:
        found.add_argument("--ctx", type=_int_list, help=text)

    def root_flag(found: argparse.ArgumentParser) -> None:
        found.add_argument(
            "--fixtures-root", metavar="DIR", help="folder holding fixtures/ and hidden_tests/ (default: the checkout)"
        )

    one = command("run", run, "run the agent on each fixture and append one row per run to a results CSV")
    config_flag(one)
    ctx_flag(one, "context sizes, e.g. 4096,8192")
    one.add_argument("--presets", type=_csv_list, help="agent presets, e.g. part2,part3")
    one.add_argument("--fixtures", type=_csv_list, help="fixture names, e.g. todo_repo")
    root_flag(one)
    one.add_argument("--reps", type=int, help="runs per (fixture, preset, ctx)")
    one.add_argument("--max-steps", type=int, help="step limit per run (default: the fixture's)")
    one.add_argument("--sandbox", metavar="|".join(SANDBOX_KINDS), help="where the agent runs")
    one.add_argument("--servers", metavar="|".join(SERVER_KINDS), help="where Flint and Jeff run")
    one.add_argument("--out", help="results CSV (default: results/<date>-<sha>.csv)")
    one.add_argument(
        "--resume", action="store_true", default=None, help="skip runs already in --out with the same inputs"
    )
    one.add_argument("--flint-url", help="with --servers external: Flint's URL (default $FLINT_URL)")
    one.add_argument("--jeff-url", help="with --servers external: Jeff's URL (default $JEFF_URL; none: no Jeff)")
    one.add_argument("--workers", type=int, help="server pairs side by side on the CPU, one queue (default 1)")
    one.add_argument(
        "--gpu-devices", type=_devices, metavar="all|0,1", help="one worker (pair of servers) per GPU named, or all"
    )
    one.add_argument(
        "--shard", metavar="I/N", help="run the I-th of N parts of the plan (1-based), into <out>-shardIofN.csv"
    )

    one = command("merge", merge, "join the results files of a matrix's shards into one file")
    one.add_argument("files", nargs="+", metavar="SHARD.csv", help="e.g. results/m-shard*.csv")
    one.add_argument("--out", required=True, help="the merged results CSV")
    one.add_argument("--config", help="the matrix the shards ran: list the planned runs none delivered")
    ctx_flag(one, "the shards' --ctx, if they were given one")
    one.add_argument("--presets", type=_csv_list, help="the shards' --presets, if given")
    one.add_argument("--fixtures", type=_csv_list, help="the shards' --fixtures, if given")
    one.add_argument("--reps", type=int, help="the shards' --reps, if given")
    one.add_argument(
        "--require-complete", action="store_true", help="exit 1 when a planned run is missing (needs the matrix)"
    )

    one = command("up", up, "start Flint and Jeff with compose (GPU, else CPU) and leave them running")
    config_flag(one)
    ctx_flag(one, "Flint's context size (default: the settings' first)")
    config_flag(command("down", down, "stop what `up` started"))
    config_flag(command("models", models, "fetch the configured hub models into the shared cache ahead of time"))
    one = command("gpu-check", gpu_check, "once per GPU host: NVML, the sampler, compose, one real run")
    config_flag(one)
    ctx_flag(one, "context size of the real run (default: the settings' first)")
    command("gpu-image", gpu_image, "build the CUDA llama-server image from the pinned llama.cpp source, once per host")

    one = command("compare", compare, "compare results CSVs group by group, with exact tests")
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

    one = command("history", history, "results files lined up by date: series, change points, plots")
    one.add_argument("files", nargs="+", metavar="RESULTS.csv", help="e.g. results/nightly-*.csv")
    one.add_argument("--metric", action="append", help="completed, wall_s, ... (repeatable; default: the main ones)")
    one.add_argument("--alpha", type=float, default=0.01, help="significance level of each change point (0.01)")
    one.add_argument("--out-dir", help="where to write history.md and its plots (default: history-report/ beside)")

    one = command("report", report, "markdown report with PNG plots beside a results CSV")
    one.add_argument("file", metavar="RESULTS.csv")
    one.add_argument(
        "--out-dir", help="where to write report.md and the plots (default: <CSV name>-report/ beside the CSV)"
    )

    one = command("replay", replay, "what other clearing policies would have cost these runs' prompt cache")
    one.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="results/runs/<run_id> folders")
    one.add_argument("--policy", action="append", help="after:H, before:H, lowwater:H:L, none, run (:keep=K)")
    one.add_argument("--flint-url", help="a llama-server with the runs' model and template, to count prompts")
    one.add_argument("--csv", help="also write one line per run and policy to this CSV")

    one = command("migrate", migrate, "rewrite a results CSV of an older bench under the current columns")
    one.add_argument("file", metavar="OLD.csv")

    group = sub.add_parser("fixtures", help="fixture tools").add_subparsers(dest="fixtures_command", required=True)
    one = group.add_parser("check", help="verify every fixture against its hidden tests and solution")
    one.set_defaults(function=fixtures_check)
    one.add_argument("names", nargs="*", help="fixture names (default: all)")
    config_flag(one)
    root_flag(one)
    ctx_flag(one, "windows the task must fit (default: the settings')")
    one.add_argument("--flint-url", help="a llama-server whose tokenizer measures the task (default $FLINT_URL)")
    one = group.add_parser("import", help="write fixtures from exercism exercises (a folder of them, or one)")
    one.set_defaults(function=fixtures_import)
    one.add_argument("kind", choices=["exercism"], help="the suite's layout")
    one.add_argument("sources", nargs="+", metavar="SRC", help="an exercise folder, or a folder of exercises")
    one.add_argument("--into", required=True, metavar="DIR", help="the fixtures root written: fixtures/, hidden_tests/")
    one.add_argument(
        "--visible", type=float, default=0.0, metavar="SHARE",
        help="share of each exercise's tests also given to the agent, read-only (default 0: all hidden)",
    )  # fmt: skip
    one.add_argument("--max-steps", type=int, default=30, help="the fixtures' step limit (default 30)")
    one.add_argument("--force", action="store_true", help="replace fixtures of the same names in DIR")

    one = command("score", score, "grade a run directory (results/runs/<run_id>), or any folder against a fixture")
    one.add_argument("run_dir", nargs="?", help="results/runs/<run_id>")
    one.add_argument("--fixture", metavar="NAME", help="with --repo: the fixture whose hidden tests grade the folder")
    one.add_argument("--repo", metavar="DIR", help="with --fixture: the folder to grade, as an agent would leave it")
    one.add_argument("--out", dest="score_out", metavar="DIR", help="with --repo: where junit.xml and score.json go")
    one.add_argument("--json", action="store_true", help="print one JSON object")
    config_flag(one)
    root_flag(one)
    one.add_argument("--sandbox", metavar="|".join(SANDBOX_KINDS), help="where grading runs (default: as bench run)")

    one = command("view", view, "one self-contained HTML page of results CSVs and their runs, step by step")
    one.add_argument("files", nargs="+", metavar="RESULTS.csv", help="one file, or two (the older first) to compare")
    one.add_argument("--out", help="the HTML file (default: <last CSV name>.html beside it)")

    group = sub.add_parser("predictions", help="predictions written before a bench").add_subparsers(
        dest="predictions_command", required=True
    )
    one = group.add_parser("score", help="hit or miss for each prediction, with the numbers")
    one.set_defaults(function=predictions_score)
    one.add_argument("predictions_file", metavar="predictions.yaml")
    one.add_argument("results_file", metavar="RESULTS.csv")

    add_submit_parser(sub, submit, DEFAULT_CONFIG)
    return parser


# Exit statuses (docs/running.md, "Exit statuses"): each means one thing, whatever the command.
EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_BUG = 0, 1, 2, 3
EXIT_SIGINT, EXIT_SIGTERM = 128 + signal.SIGINT, 128 + signal.SIGTERM


def main(argv: Sequence[str] | None = None) -> int:
    """The command's own status (0; 1: runs ended in infra_error, a gate failed); 2 a one-line error; 3 a bug in
    the bench (its traceback); 130 Ctrl-C, 143 SIGTERM."""
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose - args.quiet)
    try:
        return int(args.function(args))
    except BenchError as e:
        log.error("%s", e)
        return EXIT_ERROR
    except BrokenPipeError:  # `python -m bench compare ... | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt as e:
        log.warning("%s; rows already written are kept", "terminated" if isinstance(e, Terminated) else "interrupted")
        return EXIT_SIGTERM if isinstance(e, Terminated) else EXIT_SIGINT
    except OSError as e:
        if not is_disk_error(e):
            return _bug()
        log.error("%s", disk_error(e))
        return EXIT_ERROR
    except Exception:
        return _bug()


def _bug() -> int:
    """Anything else is a bug: its traceback, and a status of its own (1 would read as "some runs failed")."""
    traceback.print_exc()
    log.error("this is a bug in the bench: please report it with the traceback above")
    return EXIT_BUG
