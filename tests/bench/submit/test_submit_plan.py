"""What every engine shares: the matrix's settings file that the shards and the merge read, and its guards."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from submit_helpers import k8s_argv

from bench.cli import build_parser, main, settings
from bench.config import load_config


def submit(tmp_path: Path, *flags: str, results: str = "m") -> int:
    return main(k8s_argv(tmp_path, "use_jeff: false\nreps: 2\n", *flags, results=results))


def test_the_written_settings_are_the_matrix_bench_run_would_run_with_those_flags(tmp_path: Path) -> None:
    assert submit(tmp_path, "--ctx", "8192", "--presets", "part2,part3", "--max-steps", "3") == 0
    written = load_config(tmp_path / "m" / "bench.yaml", {})
    config = tmp_path / "settings.yaml"
    flags = ["run", "--config", str(config), "--ctx", "8192", "--presets", "part2,part3", "--max-steps", "3"]
    direct = settings(build_parser().parse_args(flags))
    assert written.matrix() == direct.matrix() and (written.reps, written.max_steps) == (2, 3)
    assert (written.use_jeff, written.servers, written.sandbox) == (False, "external", "local")  # the pod's own


def test_a_second_matrix_into_the_same_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert submit(tmp_path, "--ctx", "4096") == 0
    assert submit(tmp_path, "--ctx", "4096") == 0  # the same matrix again: its manifests written again
    assert submit(tmp_path, "--ctx", "8192") == 2
    assert "holds the settings of another matrix" in capsys.readouterr().err


def test_a_shard_flag_is_refused_since_submit_shards_the_matrix_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert submit(tmp_path, "--ctx", "4096", "--shard", "1/2") == 2
    assert "leave --shard" in capsys.readouterr().err


def test_apply_without_kubectl_writes_the_manifests_and_says_how_to_apply_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no kubectl here
    argv = k8s_argv(tmp_path, "use_jeff: false\n", "--ctx", "4096", options=["--apply"])
    assert main(argv) == 0
    assert "kubectl not found" in capsys.readouterr().out
    assert (tmp_path / "m" / "k8s" / "matrix.yaml").is_file() and os.environ["PATH"] == str(tmp_path / "empty")


def test_settings_a_pod_cannot_run_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert submit(tmp_path, "--ctx", "4096", "--workers", "2") == 2
    assert "in a Kubernetes pod" in capsys.readouterr().err
