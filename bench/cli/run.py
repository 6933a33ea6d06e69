"""`bench run`: the matrix, one row per run. Its flags are settings (bench.config.BenchConfig), read by `settings()`;
`bench submit` reads the flags after its `--` with the same parser (run_settings)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from bench import ROOT
from bench.cli.options import (
    DEFAULT_CONFIG,
    SANDBOX_METAVAR,
    Subparsers,
    add_command,
    config_flag,
    csv_list,
    ctx_flag,
    devices,
    root_flag,
    settings,
)
from bench.config import SETTINGS, BenchConfig
from bench.setting_types import CPU_MODEL_NAMES, SERVER_KINDS

log = logging.getLogger("bench.run.runner")
TEXT = "run the agent on each fixture and append one row per run to a results CSV"


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every run was measured; 1 when some ended in infra_error (their rows say why)."""
    import signal

    from bench.results.schema import INFRA_STOP_REASON
    from bench.run.finishing import on_sigint, on_sigterm
    from bench.run.runner import Bench
    from bench.run.spelling import continue_command

    if args.dry_run:
        from bench.run.dry_run import dry_run

        path = Path(args.config)
        print(dry_run(settings(args), path if path.exists() else None, given_flags(args), ROOT))
        return 0
    signal.signal(signal.SIGTERM, on_sigterm)  # a CI timeout or `kill` stops servers and keeps rows, like Ctrl-C
    signal.signal(signal.SIGINT, on_sigint)  # Ctrl-C during a finished run's grading waits for its row
    bench = Bench(settings(args), checkout=ROOT)
    try:
        rows = bench.run()
    except KeyboardInterrupt as stop:  # main() says it; this says how to go on
        stop.to_continue = continue_command(given_flags(args), bench.out)  # type: ignore[attr-defined]
        raise
    failed = sum(row["stop_reason"] == INFRA_STOP_REASON for row in rows)
    if failed:
        log.warning("%d of %d runs failed outside the agent (infra_error): see their error column", failed, len(rows))
    return 1 if failed else 0


def given_flags(args: argparse.Namespace) -> dict[str, object]:
    """The flags of bench run given on its command line, by setting (--config only when not the default)."""
    names = {*SETTINGS, "config"}
    given = {name: value for name, value in vars(args).items() if name in names and value not in (None, "")}
    if given.get("config") == DEFAULT_CONFIG:
        del given["config"]
    return given


def add(sub: Subparsers) -> None:
    run_flags(add_command(sub, "run", run, TEXT))


def run_flags(one: argparse.ArgumentParser) -> None:
    matrix_flags(one)
    server_flags(one)
    output_flags(one)


def matrix_flags(one: argparse.ArgumentParser) -> None:
    """What runs: the windows, the agents and their presets, the tasks, how often and how long."""
    config_flag(one)
    ctx_flag(one, "context sizes, e.g. 4096,8192")
    one.add_argument("--presets", type=csv_list, help="agent presets, e.g. part2,part3")
    one.add_argument("--agents", type=csv_list, help="agent kinds, e.g. article,mini-swe-agent (bench agents)")
    one.add_argument("--fixtures", type=csv_list, help="fixture names, e.g. todo_repo")
    root_flag(one)
    one.add_argument("--reps", type=int, help="runs per (fixture, preset, ctx)")
    one.add_argument("--max-steps", type=int, help="step limit per run (default: the fixture's)")
    one.add_argument("--sandbox", metavar=SANDBOX_METAVAR, help="where the agent runs")


def server_flags(one: argparse.ArgumentParser) -> None:
    """Where Flint and Jeff run, on which models, with which flags of the user's own."""
    one.add_argument("--servers", metavar="|".join(SERVER_KINDS), help="where Flint and Jeff run")
    one.add_argument(
        "--cpu-model", choices=CPU_MODEL_NAMES, help="Flint's model on the CPU (default smollm2, forced to call tools)"
    )
    one.add_argument("--flint-url", help="with --servers external: Flint's URL (default $FLINT_URL)")
    one.add_argument("--jeff-url", help="with --servers external: Jeff's URL (default $JEFF_URL; none: no Jeff)")
    one.add_argument("--flint-model", metavar="GGUF", help="Flint's GGUF file name in models_dir (default: --flint-hf)")
    one.add_argument(
        "--flint-hf",
        metavar="OWNER/REPO[:QUANT]",
        help="Flint from the hub (llama-server -hf) when no --flint-model; on a CPU with cpu_models: configured",
    )
    one.add_argument("--workers", type=int, help="server pairs side by side on the CPU, one queue (default 1)")
    one.add_argument(
        "--gpu-devices", type=devices, metavar="all|0,1", help="one worker (pair of servers) per GPU named, or all"
    )
    for role in ("flint", "jeff"):
        one.add_argument(
            f"--{role}-server-args",
            metavar="'FLAGS'",
            help=f"llama-server flags of your own for {role.title()}, one quoted line, e.g. '-fa on --cache-reuse 256' "
            f"(a single flag: --{role}-server-args=--swa-full)",
        )


def output_flags(one: argparse.ArgumentParser) -> None:
    """Where the rows go, and whether to continue a file, only list the runs, or run one shard."""
    one.add_argument("--out", help="results CSV (default: results/<date>-<sha>.csv)")
    one.add_argument(
        "--resume", action="store_true", default=None, help="skip runs already in --out with the same inputs"
    )
    one.add_argument(
        "--dry-run", action="store_true", help="list the runs and every setting with where it came from; run nothing"
    )
    one.add_argument(
        "--shard", metavar="I/N", help="run the I-th of N parts of the plan (1-based), into <out>-shardIofN.csv"
    )


def run_settings(config: str, flags: Sequence[str]) -> BenchConfig:
    """The settings `bench run --config CONFIG FLAGS...` would run with."""
    parser = argparse.ArgumentParser(prog="bench run", description=TEXT)
    run_flags(parser)
    return settings(parser.parse_args(["--config", config or DEFAULT_CONFIG, *flags]))
