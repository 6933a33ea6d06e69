"""`python -m bench submit slurm` on a real one-node Slurm cluster (tests/slurm_cluster.py, started for this
module and stopped by pid): a 2-shard job array against one scripted external Flint, refused unless the shards run
one at a time (--share-servers, said on each row), then the merge job that waits for it.
The array's wall time against the same shards run one after another: experiments/slurm_wall.py."""

from __future__ import annotations

import csv
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import small_task
from slurm_cluster import SlurmCluster

from bench.testing import fake_llama

ROOT = Path(__file__).resolve().parents[2]
# One group: the module's one-node cluster starts once, on one pytest-xdist worker.
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.xdist_group("slurm-submit")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with SlurmCluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


@pytest.fixture(scope="module")
def flint() -> Iterator[fake_llama.FakeLlama]:
    with fake_llama.FakeLlama(default=fake_llama.prose("Done.")) as fake:
        yield fake


def config(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.yaml"
    path.write_text("use_jeff: false\nagent_retries: 0\nagent_retry_delay_s: 0.1\n")
    return path


def run_flags(flint_url: str) -> list[str]:
    """The suite's small task (tests/small_task.py): its grading is one pytest, and nothing of it is read here."""
    return [
        "--servers",
        "external",
        "--flint-url",
        flint_url,
        "--sandbox",
        "local",
        "--fixtures",
        small_task.NAME,
        "--fixtures-root",
        str(small_task.ROOT),
        "--presets",
        "part2",
        "--ctx",
        "4096",
        "--max-steps",
        "1",
        "--reps",
        "2",
    ]


def submit_argv(results: Path, flint_url: str, *flags: str) -> list[str]:
    settings = config(results.parent / "settings")
    return [
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
        "--time",
        "10",
        *flags,
        "--",
        *run_flags(flint_url),
    ]


def submit(cluster: SlurmCluster, results: Path, flint_url: str) -> tuple[str, str, float]:
    argv = submit_argv(results, flint_url, "--share-servers")
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = dict(line.split("\t") for line in (results / "slurm" / "jobs.txt").read_text().splitlines())
    cluster.wait([jobs["shards"], jobs["merge"]], timeout_s=300)
    return jobs["shards"], jobs["merge"], time.monotonic() - started


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_two_shard_array_and_its_merge_job_deliver_the_whole_matrix(
    cluster: SlurmCluster, flint: fake_llama.FakeLlama, tmp_path: Path
) -> None:
    results = tmp_path / "matrix"
    _, _, array_wall = submit(cluster, results, flint.url)
    merge_out = (results / "slurm" / "merge.out").read_text()
    merged = rows(results / "merged.csv")
    assert len(merged) == 2, merge_out
    assert sorted(r["shard"] for r in merged) == ["1/2", "2/2"]
    assert sorted(r["rep"] for r in merged) == ["1", "2"]  # the plan's two runs, one from each shard
    assert [r["stop_reason"] for r in merged] == ["done", "done"], [r["error"] for r in merged]
    # one task at a time against the one Flint: each run's tokens agree with its /metrics, and each row says so
    assert [(r["reprocessed_check"], r["servers_shared"]) for r in merged] == [("ok", "true")] * 2
    assert "#SBATCH --array=1-2%1" in (results / "slurm" / "shards.sbatch").read_text()
    for index in (1, 2):
        shard = rows(results / f"matrix-shard{index}of2.csv")
        assert [r["shard"] for r in shard] == [f"{index}/2"]
        assert shard[0]["run_id"] in {r["run_id"] for r in merged}
        assert "bench:" in (results / "slurm" / f"shard-{index}.out").read_text()  # each task's own output
    assert (results / "merged-report" / "report.md").exists(), merge_out
    assert (results / "merged-missing.txt").read_text() == ""  # the plan's runs, all delivered
    assert '--shard "$SLURM_ARRAY_TASK_ID"/2' in (results / "slurm" / "shards.sbatch").read_text()  # kept beside

    print(f"slurm: a 2-shard array and its merge took {array_wall:.1f} s from sbatch to the merged file")


def test_shards_that_all_fail_still_get_their_merge_job_which_says_so(cluster: SlurmCluster, tmp_path: Path) -> None:
    with fake_llama.FakeLlama() as gone:
        dead_url = gone.url  # a port where nothing answers once this server is stopped
    results = tmp_path / "matrix"
    submit(cluster, results, dead_url)
    assert not list(results.glob("matrix-shard*.csv"))
    merge_out = (results / "slurm" / "merge.out").read_text()
    assert "no shard wrote a results file" in merge_out  # afterany: the merge ran although every task failed
    for index in (1, 2):
        assert "no healthy llama-server answers" in (results / "slurm" / f"shard-{index}.out").read_text()


def test_two_shards_against_one_external_server_are_refused_in_one_line(cluster: SlurmCluster, tmp_path: Path) -> None:
    results = tmp_path / "matrix"
    argv = submit_argv(results, "http://127.0.0.1:9")
    done = subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--shards 2 against one external Flint (http://127.0.0.1:9)" in line and "--share-servers" in line
    assert not (results / "slurm").exists()  # nothing was submitted
    queue = subprocess.run(["squeue", "-h"], env=cluster.env, capture_output=True, text=True, timeout=60)
    assert queue.stdout.strip() == ""
