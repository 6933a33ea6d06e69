"""The `submit` command line: `python -m bench submit slurm|k8s --shards N [...] [-- RUN FLAGS]`.

The flags after `--` are `bench run`'s settings flags (--ctx, --presets, --servers, ...): bench/cli.py reads them
exactly as `bench run` reads them and hands the settings to `command`, so a submitted matrix is the one `bench run`
with those flags would run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import ConfigError


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    function: Callable[[argparse.Namespace], int],
    config_default: str,
) -> None:
    group = sub.add_parser("submit", help="run a matrix as N shard jobs and a merge job on Slurm or Kubernetes")
    engines = group.add_subparsers(dest="engine", required=True)

    def engine(name: str, text: str) -> argparse.ArgumentParser:
        found = engines.add_parser(name, help=text, description=text)
        found.add_argument("--shards", type=int, required=True, help="how many parts the matrix is split into")
        found.add_argument("--config", default=config_default, help="settings file (default: bench.yaml, if any)")
        found.add_argument("--results", help="the matrix's folder (default: results/submit-<date>-<time>)")
        found.add_argument("run_flags", nargs=argparse.REMAINDER, help="-- then `bench run` settings flags")
        found.set_defaults(function=function)
        return found

    one = engine("slurm", "a job array (task I runs shard I/N), then a merge job after all of them (afterany)")
    one.add_argument("--partition", help="sbatch --partition")
    one.add_argument("--gpus-per-task", type=int, help="sbatch --gpus-per-task (e.g. 1 on a GPU partition)")
    one.add_argument("--time", help="sbatch --time of each task and the merge, e.g. 4:00:00")
    one = engine("k8s", "an Indexed Job of shards and a merge Job, written as manifests (and applied with --apply)")
    one.add_argument("--image", required=True, help="an image of this checkout, where `python -m bench` runs")
    one.add_argument("--claim", default="bench-results", help="the ReadWriteMany volume claim for results and models")
    one.add_argument("--apply", action="store_true", help="kubectl apply the manifests (when kubectl is on PATH)")


def run_flags(args: argparse.Namespace) -> list[str]:
    return list(args.run_flags[1:] if args.run_flags[:1] == ["--"] else args.run_flags)


def command(args: argparse.Namespace, settings: BenchConfig) -> int:
    """`submit slurm|k8s` with the matrix's settings (the --config file and the run flags)."""
    if args.shards < 1:
        raise ConfigError(f"--shards {args.shards}: at least 1")
    return slurm(args, settings) if args.engine == "slurm" else k8s(args, settings)


def results_folder(args: argparse.Namespace) -> Path:
    return Path(args.results or f"results/submit-{time.strftime('%Y%m%d-%H%M%S')}").resolve()


def slurm(args: argparse.Namespace, settings: BenchConfig) -> int:
    from bench.submit import slurm
    from bench.submit.plan import Submission, write_matrix_settings

    folder = results_folder(args)
    config = write_matrix_settings(settings, folder)
    plan = Submission(args.shards, str(folder), str(config), python=sys.executable)
    return slurm.command(plan, slurm.SlurmOptions(args.partition, args.gpus_per_task, args.time))


def k8s(args: argparse.Namespace, settings: BenchConfig) -> int:
    from bench.submit import k8s
    from bench.submit.plan import write_matrix_settings

    folder = results_folder(args)
    settings = k8s.pod_settings(settings)
    options = k8s.K8sOptions(image=args.image, name=k8s_name(folder.name), claim=args.claim)
    config = write_matrix_settings(settings, folder)
    documents = k8s.manifests(settings, args.shards, options, config.read_text())
    return k8s.command(documents, folder / "k8s", args.apply)


def k8s_name(text: str) -> str:
    """A Kubernetes object name (lower-case letters, digits, '-'; at most 52 so that `-shards` still fits 63)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower()).strip("-")[:52].strip("-")
    if not name:
        raise ConfigError(f"--results {text!r}: its folder name must hold a letter or digit (it names the Jobs)")
    return name
