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
from bench.submit.k8s_pods import Images


@dataclass(frozen=True)
class SubmitOptions:
    """`bench submit`'s own options (bench/cli/submit.py); the matrix comes apart, as settings."""

    engine: str  # slurm | k8s
    shards: int
    checkout: Path  # this repository: where Slurm's jobs run, what the bench image holds
    results: str | None = None  # the matrix's folder; None: results/submit-<date>-<time>
    partition: str | None = None  # slurm: sbatch --partition
    gpus_per_task: int | None = None  # slurm: sbatch --gpus-per-task
    time: str | None = None  # slurm: sbatch --time
    share_servers: bool = False  # slurm: the shards against one external server, one shard at a time
    image: str | None = None  # k8s: an image of this checkout (None: the one `make bench-image` builds)
    flint_image: str | None = None  # k8s: Flint's llama-server (None: llama_image, `make gpu-image`)
    jeff_image: str | None = None  # k8s: Jeff's CPU llama-server (None: the one `make bench-image` builds)
    claim: str = "bench-results"  # k8s: the ReadWriteMany volume claim
    storage: str = "50Gi"  # k8s: its size
    storage_class: str | None = None  # k8s: its storage class (None: the cluster's default)
    namespace: str = "default"  # k8s: where every object goes
    deadline_s: int = 3 * 24 * 3600  # k8s: the shards Job's activeDeadlineSeconds
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
    return slurm.command(
        plan,
        slurm.SlurmOptions(options.checkout, options.partition, options.gpus_per_task, options.time, serial=serial),
    )


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
    template = k8s.flint_template(settings, options.checkout)  # read here, where the user's file is
    settings = k8s.pod_settings(settings)
    pods = k8s.K8sOptions(
        images=pod_images(options, settings),
        name=k8s_name(folder.name),
        namespace=options.namespace,
        claim=options.claim,
        storage=options.storage,
        storage_class=options.storage_class,
        deadline_s=options.deadline_s,
        flint_template=template,
    )
    config = write_matrix_settings(settings, folder)
    documents = k8s.manifests(settings, options.shards, pods, config.read_text())
    return k8s.command(documents, folder / "k8s", options.apply)


def pod_images(options: SubmitOptions, settings: BenchConfig) -> Images:
    """The pods' three images: as given, or the ones this checkout builds (tags of their content, never `:latest`)."""
    from bench.llama.cpu_image import llama_cpu_image
    from bench.submit.image import bench_image

    bench = options.image or bench_image(options.checkout)
    jeff = options.jeff_image or llama_cpu_image(options.checkout)
    images = Images(bench, options.flint_image or settings.llama_image, jeff)
    for flag, image in (("--image", images.bench), ("--flint-image", images.flint), ("--jeff-image", images.jeff)):
        fixed_image(flag, image)
    return images


def fixed_image(flag: str, image: str) -> None:
    """An image by a tag of fixed content or a digest: `:latest`, or no tag, is another image after every push."""
    name = image.split("@", 1)[0]
    tag = name.rsplit(":", 1)[1] if ":" in name.rsplit("/", 1)[-1] else ""
    if "@" not in image and tag in ("", "latest"):
        raise ConfigError(f"{flag} {image}: name a tag of fixed content (or a digest), not {tag or 'no tag'}")


def k8s_name(text: str) -> str:
    """A Kubernetes object name (lower-case letters, digits, '-'; at most 52 so that `-shards` still fits 63)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower()).strip("-")[:52].strip("-")
    if not name:
        raise ConfigError(f"--results {text!r}: its folder name must hold a letter or digit (it names the Jobs)")
    return name
