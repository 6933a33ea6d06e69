"""`bench submit slurm|k8s --shards N [...] [-- RUN FLAGS]`: the flags after `--` read as `bench run` reads them, so
the submitted matrix is the one `bench run` with those flags would run (bench/submit/commands.py does the rest)."""

from __future__ import annotations

import argparse

from bench import ROOT
from bench.cli.options import DEFAULT_CONFIG, Subparsers, verbosity_flags
from bench.cli.run import run_settings


def submit(args: argparse.Namespace) -> int:
    from bench.submit.commands import SubmitOptions, command

    if args.engine == "slurm":
        options = SubmitOptions(
            args.engine,
            args.shards,
            ROOT,
            args.results,
            partition=args.partition,
            gpus_per_task=args.gpus_per_task,
            time=args.time,
            share_servers=args.share_servers,
        )
    else:
        options = SubmitOptions(
            args.engine,
            args.shards,
            ROOT,
            args.results,
            image=args.image,
            flint_image=args.flint_image,
            jeff_image=args.jeff_image,
            claim=args.claim,
            storage=args.storage,
            storage_class=args.storage_class,
            namespace=args.namespace,
            deadline_s=args.deadline_s,
            apply=args.apply,
        )
    return command(options, run_settings(args.config, run_flags(args)))


def run_flags(args: argparse.Namespace) -> list[str]:
    return list(args.run_flags[1:] if args.run_flags[:1] == ["--"] else args.run_flags)


def add(sub: Subparsers) -> None:
    group = sub.add_parser("submit", help="run a matrix as N shard jobs and a merge job on Slurm or Kubernetes")
    engines = group.add_subparsers(dest="engine", required=True)
    slurm = "a job array (task I runs shard I/N), then a merge job after all of them (afterany)"
    add_slurm(engine(engines, "slurm", slurm))
    k8s = "an Indexed Job of shards and a merge Job, written as manifests (and applied with --apply)"
    add_k8s(engine(engines, "k8s", k8s))


def engine(engines: Subparsers, name: str, text: str) -> argparse.ArgumentParser:
    """An engine's sub-parser with the flags every engine shares: the shards, the settings, the matrix's folder."""
    found: argparse.ArgumentParser = engines.add_parser(name, help=text, description=text)
    found.add_argument("--shards", type=int, required=True, help="how many parts the matrix is split into")
    found.add_argument("--config", default=DEFAULT_CONFIG, help="settings file (default: bench.yaml, if any)")
    found.add_argument("--results", help="the matrix's folder (default: results/submit-<date>-<time>)")
    found.add_argument("run_flags", nargs=argparse.REMAINDER, help="-- then `bench run` settings flags")
    found.set_defaults(function=submit)
    verbosity_flags(found)
    return found


def add_slurm(one: argparse.ArgumentParser) -> None:
    """sbatch's own options."""
    one.add_argument("--partition", help="sbatch --partition")
    one.add_argument("--gpus-per-task", type=int, help="sbatch --gpus-per-task (e.g. 1 on a GPU partition)")
    one.add_argument("--time", help="sbatch --time of each task and the merge, e.g. 4:00:00")
    one.add_argument(
        "--share-servers", action="store_true", help="--servers external: run the shards one at a time against them"
    )


def add_k8s(one: argparse.ArgumentParser) -> None:
    """The pods' images, the results volume, where the objects go and how long the shards may take."""
    one.add_argument("--image", help="the bench: an image of this checkout (default: the one make bench-image builds)")
    one.add_argument("--flint-image", help="Flint's llama-server with CUDA (default: llama_image, make gpu-image)")
    one.add_argument("--jeff-image", help="Jeff's CPU llama-server (default: the one make bench-image builds)")
    one.add_argument("--claim", default="bench-results", help="the ReadWriteMany volume claim for results and models")
    one.add_argument("--storage", default="50Gi", help="the claim's size (default 50Gi: the models and the results)")
    one.add_argument(
        "--storage-class", help="the claim's storage class, one with ReadWriteMany (default: the cluster's)"
    )
    one.add_argument("--namespace", default="default", help="the namespace of every object (default: default)")
    one.add_argument("--deadline-s", type=int, default=3 * 24 * 3600, help="the shards' deadline (default: 3 days)")
    one.add_argument("--apply", action="store_true", help="kubectl apply the manifests (when kubectl is on PATH)")
