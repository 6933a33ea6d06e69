"""One-time measurement: a 2-shard Slurm array with its merge job against the same two shards run one after another.

    PYTHONPATH=tests .venv/bin/python experiments/slurm_wall.py   (as root, with Debian's slurm-wlm and munge installed)

Starts a one-node cluster of its own (tests/slurm_cluster.py) and a scripted Flint, submits the matrix of
tests/integration/test_slurm_submit.py, waits for the merged file, then runs `bench run --shard I/2` for I = 1, 2
in turn with the same settings file, and prints both wall times. The two tasks share the one scripted Flint, so
they are submitted with --share-servers and run one at a time (shards at once would share its slot and cache): the
figure says what Slurm's own overhead costs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurm_cluster import SlurmCluster

from bench import ROOT
from bench.testing import fake_llama

FLAGS = [
    "--servers",
    "external",
    "--sandbox",
    "local",
    "--fixtures",
    "todo_repo",
    "--presets",
    "part2",
    "--ctx",
    "4096",
    "--max-steps",
    "1",
    "--reps",
    "2",
]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, SlurmCluster(Path(tmp) / "slurm") as cluster:
        settings = Path(tmp) / "settings.yaml"
        settings.write_text("use_jeff: false\nagent_retries: 0\n")
        results = Path(tmp) / "matrix"
        with fake_llama.FakeLlama(default=fake_llama.prose("Done.")) as flint:
            started = time.monotonic()
            argv = [
                sys.executable,
                "-m",
                "bench",
                "submit",
                "slurm",
                "--shards",
                "2",
                "--results",
                str(results),
                "--config",
                str(settings),
                "--share-servers",
                "--",
                *FLAGS,
                "--flint-url",
                flint.url,
            ]
            subprocess.run(argv, cwd=ROOT, env=cluster.env, check=True, capture_output=True)
            jobs = dict(line.split("\t") for line in (results / "slurm" / "jobs.txt").read_text().splitlines())
            cluster.wait([jobs["shards"]], timeout_s=600)
            array = time.monotonic() - started
            cluster.wait([jobs["merge"]], timeout_s=600)
            merged = time.monotonic() - started
            started = time.monotonic()
            for index in (1, 2):
                argv = [
                    sys.executable,
                    "-m",
                    "bench",
                    "run",
                    "--config",
                    str(results / "bench.yaml"),
                    "--shard",
                    f"{index}/2",
                    "--out",
                    str(Path(tmp) / "sequential" / "matrix.csv"),
                ]
                subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
            sequential = time.monotonic() - started
    print(f"2-shard Slurm array: {array:.1f} s from sbatch until both tasks ended; {merged:.1f} s until the merge job")
    print(f"ended (merged file and report); the same 2 shards one after another: {sequential:.1f} s")


if __name__ == "__main__":
    main()
