"""What every engine runs: N `bench run --shard I/N` command lines and one `bench merge`, over one settings file.

The matrix's settings (the --config file with the run flags given to `submit` applied) are written once to
DIR/bench.yaml beside the results, and every shard and the merge read that file: the shards cannot run different
matrices, the merge lists the missing runs of the very plan the shards split, and editing bench.yaml after a
submit changes nothing of a submitted matrix.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.config import BenchConfig
from bench.errors import ConfigError

# Settings that belong to one shard's invocation, never to the matrix (submit sets them per shard).
PER_INVOCATION = {"out", "resume", "shard"}
MATRIX_CSV = "matrix.csv"  # each shard writes matrix-shardIofN.csv beside it (bench/run/shards.py names them)
MERGED_CSV = "merged.csv"
# How long an engine's stop (Slurm's time limit, Kubernetes' pod deletion) leaves a shard between its SIGTERM and its
# SIGKILL: enough to grade a run whose agent has just ended and write its row (bench/run/finishing.py).
GRACE_S = 120


@dataclass(frozen=True)
class Submission:
    """One matrix split into `shards` parts: its files in the folder `results` and its settings file `config`, as
    paths the jobs see them."""

    shards: int
    results: str
    config: str
    python: str = "python"

    def shard_csv(self, index: int | str) -> str:
        return f"{self.results}/matrix-shard{index}of{self.shards}.csv"

    def run_argv(self, index: int | str) -> list[str]:
        """The command line of shard `index` (1-based; a shell variable such as "$SLURM_ARRAY_TASK_ID" works)."""
        out = f"{self.results}/{MATRIX_CSV}"
        shard = f"{index}/{self.shards}"
        return [self.python, "-m", "bench", "run", "--config", self.config, "--shard", shard, "--resume", "--out", out]

    def merge_argv(self, inputs: list[str]) -> list[str]:
        """The merge of the shards' files: the merged CSV, and MERGED-missing.txt listing the planned runs that no
        shard delivered (a non-zero status then)."""
        merged = f"{self.results}/{MERGED_CSV}"
        return [
            self.python,
            "-m",
            "bench",
            "merge",
            *inputs,
            "--out",
            merged,
            "--config",
            self.config,
            "--shards",
            str(self.shards),
            "--require-complete",
        ]

    def report_argv(self) -> list[str]:
        return [self.python, "-m", "bench", "report", f"{self.results}/{MERGED_CSV}"]


INPUTS = '"${inputs[@]}"'  # the shards' files that exist, as the merge script collects them


def merge_shell(plan: Submission) -> list[str]:
    """The merge job's shell lines: the shards' files that exist merged (the missing runs listed, a non-zero status
    then), and the merged file's report."""
    expected = " ".join(shell_line([plan.shard_csv(i)]) for i in range(1, plan.shards + 1))
    merged = shell_line([f"{plan.results}/{MERGED_CSV}"])
    return [
        "inputs=()",
        f"for csv in {expected}; do",
        '  if [ -f "$csv" ]; then inputs+=("$csv"); else echo "no results file from a shard: $csv"; fi',
        "done",
        'if [ "${#inputs[@]}" -eq 0 ]; then echo "no shard wrote a results file: see the shards\' output"; exit 1; fi',
        "status=0",
        shell_line(plan.merge_argv([INPUTS])) + " || status=$?",
        f"if [ -f {merged} ]; then {shell_line(plan.report_argv())} || status=$(( status ? status : $? )); fi",
        'exit "$status"',
    ]


def shell_line(argv: list[str]) -> str:
    """A command line for a shell script, quoted, except shell variables ("$NAME") that the shell must expand."""
    return " ".join(word if word.startswith('"$') else shlex.quote(word) for word in argv)


def write_matrix_settings(settings: BenchConfig, folder: Path, name: str = "bench.yaml") -> Path:
    """The matrix's settings as a file of its own (only what differs from the defaults, so it reads like a
    bench.yaml), refused when it already holds another matrix's: two submissions never share one folder."""
    if settings.shard is not None:
        raise ConfigError("submit splits the matrix itself: leave --shard (and `shard:` in the settings) out")
    data = settings.model_dump(mode="json", exclude_defaults=True, exclude=PER_INVOCATION)
    text = "# The matrix `python -m bench submit` split into shards; every shard and the merge read this file.\n"
    text += yaml.safe_dump(data, sort_keys=False)
    path = folder / name
    if path.exists() and path.read_text() != text:
        raise ConfigError(f"{path} holds the settings of another matrix: submit into a new --results folder")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
