"""`bench replay RUN_DIR...`: the runs walked again under other clearing policies, counted with Flint's tokenizer;
with --against, their recorded requests sent to llama-servers again (another build, other flags), and with
--check-checkpoints, a scripted conversation that tells whether a build keeps an agent's prompt cache."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import ROOT
from bench.cli.options import Subparsers, add_command
from bench.errors import ConfigError


def replay(args: argparse.Namespace) -> int:
    run_dirs = [Path(d) for d in args.run_dirs]
    csv = Path(args.csv) if args.csv else None
    if args.against or args.check_checkpoints:
        from bench.replay import checkpoints, server_replay

        options = server_replay.AgainstOptions(
            run_dirs=run_dirs,
            checkout=ROOT,
            against=args.against or ["embedded"],
            llama_servers=args.llama_server or [],
            model=args.model,
            server_args=args.server_args or [],
            csv=csv,
        )
        return checkpoints.command(options) if args.check_checkpoints else server_replay.command(options)
    if args.llama_server or args.model or args.server_args:
        raise ConfigError("--llama-server, --model and --server-args go with --against (or --check-checkpoints)")
    if not run_dirs:
        raise ConfigError("name at least one run's folder (results/runs/<run_id>)")
    from bench.replay.command import ReplayOptions, command

    return command(ReplayOptions(run_dirs, ROOT, args.policy or [], args.flint_url, csv=csv))


def add(sub: Subparsers) -> None:
    one = add_command(
        sub, "replay", replay, "what other clearing policies, builds or server flags would cost these runs"
    )
    one.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="results/runs/<run_id> folders")
    one.add_argument("--policy", action="append", help="after:H, before:H, lowwater:H:L, none, run (:keep=K)")
    one.add_argument("--flint-url", help="a llama-server with the runs' model and template, to count prompts")
    one.add_argument("--csv", help="also write the results to this CSV (one line per run and policy, or per request)")
    server = one.add_argument_group("sending the recorded requests to a llama-server")
    server.add_argument(
        "--against",
        action="append",
        metavar="URL|embedded",
        help="a llama-server's URL, or `embedded`: one started here as the run's Flint was (repeat to compare)",
    )
    server.add_argument("--llama-server", action="append", metavar="PATH", help="embedded: another build (repeatable)")
    server.add_argument("--model", metavar="PATH", help="embedded: another GGUF file than the runs'")
    server.add_argument(
        "--server-args",
        action="append",
        metavar="FLAGS",
        help='embedded: flags after the run\'s own, e.g. "--cache-reuse 256" (repeat: one set-up each)',
    )
    server.add_argument(
        "--check-checkpoints",
        action="store_true",
        help="send a scripted tool-call conversation and fail when the server loses its cache (before upgrading)",
    )
