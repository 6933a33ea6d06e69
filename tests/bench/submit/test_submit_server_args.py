"""llama-server flags of the user's own in a submitted matrix: the Kubernetes sidecars get them after the bench's own
flags, Slurm's tasks read them from the matrix's settings file, and a flag the bench owns is refused before any
file is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from submit_helpers import k8s_argv

from bench import ROOT
from bench.cli import main
from bench.cli.run import run_settings
from bench.config import load_config
from bench.submit.plan import Submission, write_matrix_settings
from bench.submit.slurm import SlurmOptions, shards_script

OWN = ["--flint-server-args", "-fa on -ctk q8_0", "--jeff-server-args", "--cache-reuse 64"]


def submit_k8s(tmp_path: Path, *flags: str) -> int:
    return main(k8s_argv(tmp_path, "use_jeff: true\n", "--ctx", "4096", *flags))


def test_the_sidecars_end_with_the_users_flags_and_the_pods_settings_keep_them(tmp_path: Path) -> None:
    assert submit_k8s(tmp_path, *OWN) == 0
    documents: list[dict[str, Any]] = list(yaml.safe_load_all((tmp_path / "m" / "k8s" / "matrix.yaml").read_text()))
    (shards,) = [d for d in documents if d["kind"] == "Job" and d["metadata"]["name"].endswith("-shards")]
    sidecars = {c["name"]: c for c in shards["spec"]["template"]["spec"]["initContainers"]}
    flint, jeff = sidecars["flint"], sidecars["jeff"]
    assert flint["args"][-4:] == ["-fa", "on", "-ctk", "q8_0"] and "-ngl" in flint["args"]
    assert jeff["args"][-2:] == ["--cache-reuse", "64"] and "--reasoning" in jeff["args"]
    pods = load_config(tmp_path / "m" / "bench.yaml", {})  # what each pod's bench reads: its rows record them
    assert (pods.flint_server_args, pods.jeff_server_args) == (["-fa", "on", "-ctk", "q8_0"], ["--cache-reuse", "64"])


def test_slurms_tasks_read_the_flags_from_the_matrixs_settings_file(tmp_path: Path) -> None:
    settings = run_settings("", ["--servers", "embedded", *OWN])
    path = write_matrix_settings(settings, tmp_path)
    assert load_config(path, {}).flint_server_args == ["-fa", "on", "-ctk", "q8_0"]
    script = shards_script(Submission(2, str(tmp_path), str(path)), SlurmOptions(ROOT))
    assert f"--config {path}" in script  # every task's `bench run` starts its servers from that file


def test_a_flag_the_bench_owns_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert submit_k8s(tmp_path, "--flint-server-args", "-np 2") == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "-np (the slots) is the bench's own" in line
    assert not (tmp_path / "m").exists()
