"""The batch scripts `bench submit slurm` writes, without Slurm: shellcheck-clean, the array task's line is shard
$SLURM_ARRAY_TASK_ID of N, and the sbatch options asked for are the directives written. (The real cluster runs them
in tests/integration/test_slurm_submit.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import ROOT
from bench.cli import main
from bench.config import load_config
from bench.submit.plan import GRACE_S, Submission
from bench.submit.slurm import SlurmOptions, merge_script, shards_script

PLAN = Submission(3, "/data/matrix", "/data/matrix/bench.yaml", python="/opt/venv/bin/python")


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(
    "script",
    [
        shards_script(PLAN, SlurmOptions(ROOT)),
        shards_script(PLAN, SlurmOptions(ROOT, gpus_per_task=1)),
        merge_script(PLAN, SlurmOptions(ROOT)),
    ],
    ids=["shards", "shards-gpu", "merge"],
)
def test_the_scripts_are_shellcheck_clean(script: str, tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:  # as for the real parts (tests/conftest.py): skipped here, a failure under CI
        reason = "shellcheck not found: apt-get install shellcheck (make lint needs it too)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):  # tests/conftest.py's in_ci()
            pytest.fail(reason)
        pytest.skip(reason)
    (tmp_path / "job.sbatch").write_text(script)
    done = subprocess.run([shellcheck, str(tmp_path / "job.sbatch")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.usefixtures("child_processes")
def test_task_i_runs_shard_i_of_n_and_resumes_its_own_file(tmp_path: Path) -> None:
    script = shards_script(PLAN, SlurmOptions(ROOT, partition="gpu", gpus_per_task=1, time="4:00:00"))
    assert "#SBATCH --array=1-3" in script
    for directive in ("--partition=gpu", "--gpus-per-task=1", "--time=4:00:00", "--output=/data/matrix/slurm/shard-%a"):
        assert f"#SBATCH {directive}" in script
    # the exec line, run by bash with SLURM_ARRAY_TASK_ID=2 and `python` replaced by printf: the words a shard gets
    line = next(line for line in script.splitlines() if line.startswith("exec "))
    printed = subprocess.run(
        ["bash", "-c", line.replace("exec /opt/venv/bin/python", "printf '%s\\n'")],
        env={"SLURM_ARRAY_TASK_ID": "2"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert printed.stdout.splitlines() == [
        "-m",
        "bench",
        "run",
        "--config",
        "/data/matrix/bench.yaml",
        "--shard",
        "2/3",
        "--resume",
        "--out",
        "/data/matrix/matrix.csv",
    ]


def test_the_merge_job_asks_for_no_gpu() -> None:
    script = merge_script(PLAN, SlurmOptions(ROOT, gpus_per_task=1))
    assert "--gpus-per-task" not in script and "--require-complete" in script


@pytest.mark.usefixtures("child_processes")
def test_with_gpus_each_task_pins_the_bench_to_the_card_slurm_gave_it() -> None:
    script = shards_script(PLAN, SlurmOptions(ROOT, gpus_per_task=1))
    preamble = script.split("\nexec ")[0]  # everything before the bench starts
    for visible, device in (("3", "3"), ("GPU-1f2e,GPU-77aa", "GPU-1f2e"), ("", "")):
        shown = subprocess.run(
            ["bash", "-c", preamble + '\necho "${GPU_DEVICE:-}"'],
            capture_output=True,
            text=True,
            env={"CUDA_VISIBLE_DEVICES": visible},
            check=True,
        )
        assert shown.stdout.strip() == device
    assert "GPU_DEVICE" not in shards_script(PLAN, SlurmOptions(ROOT))  # no GPUs asked for: the settings' own card


def test_before_its_time_limit_the_bench_alone_gets_sigterm_with_time_to_write_its_row() -> None:
    assert f"#SBATCH --signal=B:TERM@{GRACE_S}" in shards_script(PLAN, SlurmOptions(ROOT))


def test_shards_that_share_one_external_server_run_one_task_at_a_time() -> None:
    assert "#SBATCH --array=1-3%1" in shards_script(PLAN, SlurmOptions(ROOT, serial=True))
    assert "#SBATCH --array=1-3\n" in shards_script(PLAN, SlurmOptions(ROOT))


def test_two_shards_against_one_external_server_are_refused_or_shared_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch: the submission stops after the settings
    config = tmp_path / "settings.yaml"
    config.write_text("use_jeff: false\n")
    run = ["--", "--servers", "external", "--flint-url", "http://127.0.0.1:9", "--ctx", "4096"]
    argv = ["submit", "slurm", "--shards", "2", "--config", str(config), "--results", str(tmp_path / "m")]
    assert main([*argv, *run]) == 2
    assert "--shards 2 against one external Flint (http://127.0.0.1:9)" in caplog.text
    assert not (tmp_path / "m").exists()
    assert main([*argv, "--share-servers", *run]) == 2  # sbatch not found, once the matrix is written
    assert load_config(tmp_path / "m" / "bench.yaml", {}).servers_shared is True  # each row will say so
    assert main([*argv[:3], "1", *argv[4:6], "--results", str(tmp_path / "one"), *run]) == 2  # one shard: its own
    assert load_config(tmp_path / "one" / "bench.yaml", {}).servers_shared is False
