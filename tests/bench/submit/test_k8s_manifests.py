"""`python -m bench submit k8s`: the manifests validate against Kubernetes' own schemas (kubernetes-validate, offline,
strict: an unknown field fails), and the pods' scripts, run by bash with a `python` that records its arguments,
run exactly the shard and merge command lines. No Kubernetes cluster runs them here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from bench.cli import build_parser, main, settings

KUBERNETES = "1.33"  # the oldest release the manifests are kept valid for (sidecars and backoffLimitPerIndex: GA)
# A `python` that records its arguments, one per line, and a blank line after each call.
RECORDER = '#!/bin/sh\nfor arg; do printf "%s\\n" "$arg" >> "$CALLS"; done; echo >> "$CALLS"\n'


def render(tmp_path: Path, *flags: str) -> list[dict[str, Any]]:
    config = tmp_path / "settings.yaml"
    config.write_text("use_jeff: true\nreps: 3\npresets: [part2, part3]\n")
    argv = ["submit", "k8s", "--shards", "3", "--image", "registry.example/agent-bench:1", "--config", str(config),
            "--results", str(tmp_path / "m1"), "--", "--ctx", "8192", *flags]  # fmt: skip
    assert main(argv) == 0
    return list(yaml.safe_load_all((tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()))


def by_kind(documents: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return found


def test_the_manifests_validate_against_the_kubernetes_schemas_offline(tmp_path: Path) -> None:
    documents = render(tmp_path)
    assert sorted(d["kind"] for d in documents) == ["ConfigMap", "Job", "Job", "PersistentVolumeClaim"]
    for document in documents:
        assert kubernetes_validate.validate(document, KUBERNETES, strict=True) == KUBERNETES
    broken = by_kind(documents, "Job", "-shards")
    broken["spec"]["completionMode"] = "Indexd"
    broken["spec"]["template"]["spec"]["containers"][0]["comand"] = ["x"]
    with pytest.raises(kubernetes_validate.ValidationError):  # the check can fail: a typo is caught
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


@pytest.mark.usefixtures("child_processes")
def test_each_pod_runs_its_shard_with_the_servers_beside_it(tmp_path: Path) -> None:
    documents = render(tmp_path)
    shards = by_kind(documents, "Job", "-shards")
    assert shards["spec"]["completionMode"] == "Indexed" and shards["spec"]["completions"] == 3
    pod = shards["spec"]["template"]["spec"]
    flint, jeff = pod["initContainers"]
    assert flint["restartPolicy"] == jeff["restartPolicy"] == "Always"  # sidecars: up before the bench, down after
    assert flint["resources"]["limits"] == {"nvidia.com/gpu": 1} and "limits" not in jeff["resources"]
    assert flint["args"][flint["args"].index("-c") + 1] == "8192"  # the matrix's one window
    assert flint["args"][flint["args"].index("--port") + 1] == "8080"
    assert jeff["args"][jeff["args"].index("--port") + 1] == "8081"

    (bench,) = pod["containers"]
    config_text = by_kind(documents, "ConfigMap")["data"]["bench.yaml"]
    for index in range(3):
        (call,) = run_pod_script(tmp_path / f"pod-{index}", bench["command"], {"JOB_COMPLETION_INDEX": str(index)})
        assert call[:3] == ["-m", "bench", "run"]
        assert call[call.index("--shard") + 1] == f"{index + 1}/3"
        # what `bench run` reads from that command line and the ConfigMap's file: the pod's servers, this matrix
        (tmp_path / "config.yaml").write_text(config_text)
        call[call.index("--config") + 1] = str(tmp_path / "config.yaml")
        chosen = settings(build_parser().parse_args(call[2:]))
        assert (chosen.servers, chosen.sandbox) == ("external", "local")
        assert (chosen.flint_url, chosen.jeff_url) == ("http://127.0.0.1:8080", "http://127.0.0.1:8081")
        assert (chosen.ctx, chosen.reps, chosen.presets, chosen.shard) == (
            [8192],
            3,
            ["part2", "part3"],
            f"{index + 1}/3",
        )


@pytest.mark.usefixtures("child_processes")
def test_the_merge_job_merges_the_shards_that_delivered_after_all_are_done(tmp_path: Path) -> None:
    documents = render(tmp_path)
    merge = by_kind(documents, "Job", "-merge")["spec"]["template"]["spec"]["containers"][0]
    volume = tmp_path / "volume"
    matrix = volume / "m1"
    (matrix / "done").mkdir(parents=True)
    for index in (1, 2, 3):
        (matrix / "done" / f"shard{index}.done").touch()
    for index in (1, 3):  # shard 2 ended without a file
        (matrix / f"matrix-shard{index}of3.csv").write_text("x\n")
    calls = run_pod_script(tmp_path / "merge", merge["command"], {}, volume=volume)
    assert calls[0][:3] == ["-m", "bench", "merge"]
    assert calls[0][3:5] == [f"{matrix}/matrix-shard1of3.csv", f"{matrix}/matrix-shard3of3.csv"]
    assert calls[0][calls[0].index("--out") + 1] == f"{matrix}/merged.csv" and "--require-complete" in calls[0]


def test_a_matrix_of_several_windows_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("use_jeff: false\n")
    argv = ["submit", "k8s", "--shards", "2", "--image", "i:1", "--config", str(config), "--results",
            str(tmp_path / "m"), "--", "--ctx", "4096,8192"]  # fmt: skip
    assert main(argv) == 2
    assert "one matrix per --ctx" in capsys.readouterr().err
    assert not (tmp_path / "m" / "k8s").exists()


def run_pod_script(
    folder: Path, command: list[str], env: dict[str, str], volume: Path | None = None
) -> list[list[str]]:
    """The container's command run by bash, the volume's /results at `volume`; the `python` calls it made."""
    folder.mkdir(parents=True)
    (folder / "python").write_text(RECORDER)
    (folder / "python").chmod(0o755)
    volume = volume or folder / "volume"
    script = command[2].replace("/results/", f"{volume}/")
    assert command[:2] == ["bash", "-c"]
    calls = folder / "calls"
    environment = os.environ | env | {"PATH": f"{folder}:{os.environ['PATH']}", "CALLS": str(calls)}
    subprocess.run(["bash", "-c", script], env=environment, capture_output=True, timeout=60)
    return [block.splitlines() for block in calls.read_text().split("\n\n") if block.strip()]
