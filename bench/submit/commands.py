"""`python -m bench submit slurm|k8s --shards N [...] [-- RUN FLAGS]`: a matrix as shard jobs and a merge job.

The flags after `--` are `bench run`'s settings flags (--ctx, --presets, --servers, ...): bench/cli/submit.py reads
them exactly as `bench run` reads them and hands the settings to `command`, so a submitted matrix is the one `bench
run` with those flags would run.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import ConfigError


@dataclass(frozen=True)
class SubmitOptions:
    """`bench submit`'s own options (bench/cli/submit.py); the matrix comes apart, as settings."""

    engine: str  # slurm | k8s
    shards: int
    results: str | None = None  # the matrix's folder; None: results/submit-<date>-<time>
    partition: str | None = None  # slurm: sbatch --partition
    gpus_per_task: int | None = None  # slurm: sbatch --gpus-per-task
    time: str | None = None  # slurm: sbatch --time
    share_servers: bool = False  # slurm: the shards against one external server, one shard at a time
    image: str = ""  # k8s: an image of this checkout
    claim: str = "bench-results"  # k8s: the ReadWriteMany volume claim
    apply: bool = False  # k8s: kubectl apply the manifests


def command(options: SubmitOptions, settings: BenchConfig) -> int:
    """`submit slurm|k8s` with the matrix's settings (the --config file and the run flags)."""
    if options.shards < 1:
        raise ConfigError(f"--shards {options.shards}: at least 1")
    return slurm(options, settings) if options.engine == "slurm" else k8s(options, settings)


def results_folder(options: SubmitOptions) -> Path:
    return Path(options.results or f"results/submit-{time.strftime('%Y%m%d-%H%M%S')}").resolve()


def slurm(options: SubmitOptions, settings: BenchConfig) -> int:
    from bench.submit import slurm
    from bench.submit.plan import Submission, write_matrix_settings

    settings = one_server_per_shard(settings, options)
    folder = results_folder(options)
    config = write_matrix_settings(settings, folder)
    plan = Submission(options.shards, str(folder), str(config), python=sys.executable)
    serial = settings.servers_shared
    return slurm.command(plan, slurm.SlurmOptions(options.partition, options.gpus_per_task, options.time, serial))


def one_server_per_shard(settings: BenchConfig, options: SubmitOptions) -> BenchConfig:
    """Shards running at once against one external server share its slot and prompt cache, which falsifies the
    reprocessed tokens (and each other's /metrics check): refused, or with --share-servers run one shard at a time,
    which each row says (servers_shared)."""
    if settings.servers != "external" or options.shards == 1:
        return settings
    if not options.share_servers:
        raise ConfigError(
            f"--shards {options.shards} against one external Flint ({settings.flint_url}): shards running at once "
            "would share its slot and prompt cache, which falsifies reprocessed tokens; give each shard servers of "
            "its own (--servers embedded or compose), or pass --share-servers to run the shards one at a time"
        )
    return settings.model_copy(update={"servers_shared": True})


def k8s(options: SubmitOptions, settings: BenchConfig) -> int:
    from bench.submit import k8s
    from bench.submit.plan import write_matrix_settings

    folder = results_folder(options)
    settings = k8s.pod_settings(settings)
    pods = k8s.K8sOptions(image=options.image, name=k8s_name(folder.name), claim=options.claim)
    config = write_matrix_settings(settings, folder)
    documents = k8s.manifests(settings, options.shards, pods, config.read_text())
    return k8s.command(documents, folder / "k8s", options.apply)


def k8s_name(text: str) -> str:
    """A Kubernetes object name (lower-case letters, digits, '-'; at most 52 so that `-shards` still fits 63)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower()).strip("-")[:52].strip("-")
    if not name:
        raise ConfigError(f"--results {text!r}: its folder name must hold a letter or digit (it names the Jobs)")
    return name
