"""`python -m bench submit slurm`: a job array of shards and a merge job that waits for all of them (afterany).

Two batch scripts are written to DIR/slurm/ and kept there beside the results: shards.sbatch (task I of the array
runs shard I/N) and merge.sbatch (the merged CSV, its report, and DIR/merged-missing.txt listing the planned runs no
shard delivered). sbatch submits both; Slurm does the rest, so the submitting shell may log out. Each task's output
is DIR/slurm/shard-I.out, the merge's DIR/slurm/merge.out. A task Slurm requeues resumes its own shard's file.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.errors import ConfigError, PrerequisiteError
from bench.submit.plan import GRACE_S, MERGED_CSV, Submission, merge_shell, shell_line

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlurmOptions:
    checkout: Path  # this repository: where each job runs (sbatch --chdir)
    partition: str | None = None
    gpus_per_task: int | None = None
    time: str | None = None  # sbatch --time: minutes, or [D-]HH:MM:SS
    serial: bool = False  # one task at a time (--array=1-N%1): the shards share one external server


def directives(job_name: str, output: str, options: SlurmOptions, *, gpus: bool) -> list[str]:
    lines = [f"--job-name={job_name}", f"--output={output}", f"--chdir={options.checkout}", "--ntasks=1"]
    # Before its time limit, the bench alone (B:, the batch shell it replaced) gets SIGTERM with GRACE_S left to
    # write the row of a run that has just ended (bench/run/finishing.py), then exits 143.
    lines.append(f"--signal=B:TERM@{GRACE_S}")
    if options.partition:
        lines.append(f"--partition={options.partition}")
    if options.time:
        lines.append(f"--time={options.time}")
    if gpus and options.gpus_per_task:
        lines.append(f"--gpus-per-task={options.gpus_per_task}")
    return [f"#SBATCH {line}" for line in lines]


# Slurm names the task's card in CUDA_VISIBLE_DEVICES (the node's index, or 0 inside a device cgroup, where NVML
# sees that card alone too). The bench's gpu_device would otherwise pin every task to card 0 of the node
# (bench/llama/gpu_pin.py resolves an index through NVML); GPU_DEVICE, which wins over the settings, names it.
PIN_TO_TASK_CARD = [
    "# this task's card, from Slurm, for the bench's servers and its memory sampler (the first, if several)",
    'if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then export GPU_DEVICE="${CUDA_VISIBLE_DEVICES%%,*}"; fi',
]


def shards_script(plan: Submission, options: SlurmOptions) -> str:
    head = directives("bench-shards", f"{plan.results}/slurm/shard-%a.out", options, gpus=True)
    head.insert(0, f"#SBATCH --array=1-{plan.shards}{'%1' if options.serial else ''}")
    task = '"$SLURM_ARRAY_TASK_ID"'  # 1-based, as shards are
    body = ["set -euo pipefail"]
    if options.gpus_per_task:
        body += PIN_TO_TASK_CARD
    body.append(f"exec {shell_line(plan.run_argv(task))}")
    return "\n".join(["#!/bin/bash", *head, "", *body]) + "\n"


def merge_script(plan: Submission, options: SlurmOptions) -> str:
    head = directives("bench-merge", f"{plan.results}/slurm/merge.out", options, gpus=False)
    body = [
        "set -uo pipefail",
        "# afterany: this runs when every task has ended, however it ended; a shard without a file is a missing part",
        *merge_shell(plan),
    ]
    return "\n".join(["#!/bin/bash", *head, "", *body]) + "\n"


def submit(plan: Submission, options: SlurmOptions) -> tuple[str, str]:
    """Writes both scripts and submits them; returns the array's job id and the merge's."""
    if any(c.isspace() for c in plan.results):
        raise ConfigError(f"--results {plan.results!r}: a folder without spaces (#SBATCH lines cannot quote them)")
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise PrerequisiteError("sbatch not found: run this on a Slurm submit host (or install slurm-client)")
    folder = Path(plan.results) / "slurm"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shards.sbatch").write_text(shards_script(plan, options))
    (folder / "merge.sbatch").write_text(merge_script(plan, options))
    array = _sbatch([sbatch, "--parsable", str(folder / "shards.sbatch")])
    merge = _sbatch([sbatch, "--parsable", f"--dependency=afterany:{array}", str(folder / "merge.sbatch")])
    (folder / "jobs.txt").write_text(f"shards\t{array}\nmerge\t{merge}\n")
    return array, merge


def _sbatch(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise PrerequisiteError(f"sbatch refused the job: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout.strip().split(";")[0]  # --parsable: "ID" or "ID;CLUSTER"


def command(plan: Submission, options: SlurmOptions) -> int:
    array, merge = submit(plan, options)
    print(f"shards: job array {array} (tasks 1-{plan.shards}); merge: job {merge}, after all of them")
    print(f"results: {plan.results}/{MERGED_CSV} with its report; outputs and scripts in {plan.results}/slurm/")
    print(f"follow: squeue -j {array},{merge}", file=sys.stderr)
    return 0
