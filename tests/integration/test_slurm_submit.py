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

import process_tree
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


def run_flags(flint_url: str, fixtures_root: Path = small_task.ROOT, reps: int = 2) -> list[str]:
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
        str(fixtures_root),
        "--presets",
        "part2",
        "--ctx",
        "4096",
        "--max-steps",
        "1",
        "--reps",
        str(reps),
    ]


def submit_argv(results: Path, flint_url: str, *flags: str, shards: int = 2, run: list[str] | None = None) -> list[str]:
    settings = config(results.parent / "settings")
    return [
        sys.executable,
        "-m",
        "bench",
        "submit",
        "slurm",
        "--shards",
        str(shards),
        "--results",
        str(results),
        "--config",
        str(settings),
        "--time",
        "10",
        *flags,
        "--",
        *(run or run_flags(flint_url)),
    ]


def submit(cluster: SlurmCluster, results: Path, flint_url: str) -> tuple[str, str, float]:
    argv = submit_argv(results, flint_url, "--share-servers")
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = jobs_of(results)
    cluster.wait([jobs["shards"], jobs["merge"]], timeout_s=300)
    return jobs["shards"], jobs["merge"], time.monotonic() - started


def grading_in(results: Path) -> bool:
    """Whether the bench of the shard writing into `results` grades a run (its trace kept: not the preflight's
    collection of the hidden tests)."""
    benches = process_tree.bench_runs(str(results))
    return any((results / "runs").glob("*/events.jsonl")) and any(map(process_tree.grading_pytest_runs, benches))


def jobs_of(results: Path) -> dict[str, str]:
    return dict(line.split("\t") for line in (results / "slurm" / "jobs.txt").read_text().splitlines())


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


def test_a_scancel_while_grading_makes_the_row_infra_error_and_the_shard_submitted_again_runs_it(
    cluster: SlurmCluster, flint: fake_llama.FakeLlama, tmp_path: Path
) -> None:
    root, flag = small_task.slow_fixtures(tmp_path)
    results = tmp_path / "matrix"
    argv = submit_argv(results, flint.url, shards=1, run=run_flags(flint.url, root, reps=1))
    done = subprocess.run(argv, cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = jobs_of(results)
    deadline = time.monotonic() + 300
    while not grading_in(results):
        assert time.monotonic() < deadline, (results / "slurm" / "shard-1.out").read_text()[-3000:]
        time.sleep(0.1)
    # a plain scancel: Slurm sends SIGTERM to every process of the job, the grading pytest's included
    subprocess.run(["scancel", jobs["shards"]], env=cluster.env, check=True, timeout=60)
    cluster.wait([jobs["shards"], jobs["merge"]], timeout_s=300)
    output = (results / "slurm" / "shard-1.out").read_text()
    (row,) = rows(results / "matrix-shard1of1.csv")
    assert (row["stop_reason"], row["hidden_passed"]) == ("infra_error", ""), output[-3000:]
    assert row["error"].startswith("grading was cut short: the bench was asked to stop while it ran"), row
    # the merge, after every task (afterany), does not count it delivered
    assert (results / "merged-missing.txt").read_text() == "calc part2 ctx=4096 rep=1\n"

    flag.unlink()  # the operator submits the kept script again: the shard resumes its file and runs that run again
    again = subprocess.run(
        ["sbatch", "--parsable", str(results / "slurm" / "shards.sbatch")],
        env=cluster.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    cluster.wait([again.stdout.strip().split(";")[0]], timeout_s=300)
    cut, rerun = rows(results / "matrix-shard1of1.csv")
    assert cut["run_id"] == row["run_id"] and rerun["stop_reason"] == "done", (
        results / "slurm" / "shard-1.out"
    ).read_text()
    assert rerun["hidden_passed"] == small_task.UNTOUCHED[0] and rerun["rep"] == row["rep"]
