"""llama-server flags of the user's own in a submitted matrix: the Kubernetes sidecars get them after the bench's own
flags, Slurm's tasks read them from the matrix's settings file, and a flag the bench owns is refused before any
file is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
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


def test_flint_serves_the_users_chat_template_from_the_settings_configmap(tmp_path: Path) -> None:
    """The user's --chat-template-file is a path on the submitting machine: the pods get the file in the settings'
    ConfigMap, Flint's sidecar mounts it and serves it with --jinja, and the pods' bench reads the same file, so its
    rows key on the template's sha256 as a local bench's would."""
    template = tmp_path / "mine.jinja"
    template.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    assert submit_k8s(tmp_path, "--flint-server-args", f"-fa on --chat-template-file {template}") == 0
    documents: list[dict[str, Any]] = list(yaml.safe_load_all((tmp_path / "m" / "k8s" / "matrix.yaml").read_text()))
    (config_map,) = [d for d in documents if d["kind"] == "ConfigMap"]
    assert config_map["data"]["flint.jinja"] == template.read_text()
    (shards,) = [d for d in documents if d["kind"] == "Job" and d["metadata"]["name"].endswith("-shards")]
    sidecars = {c["name"]: c for c in shards["spec"]["template"]["spec"]["initContainers"]}
    flint, jeff = sidecars["flint"], sidecars["jeff"]
    args = flint["args"]
    assert "--jinja" in args and args[args.index("--chat-template-file") + 1] == "/config/flint.jinja"
    assert str(template) not in args
    assert {"name": "config", "mountPath": "/config", "readOnly": True} in flint["volumeMounts"]
    assert all(m["name"] != "config" for m in jeff["volumeMounts"])  # Jeff serves his model's own
    pods = load_config(tmp_path / "m" / "bench.yaml", {})
    assert pods.flint_server_args == ["-fa", "on", "--chat-template-file", "/config/flint.jinja"]
    for document in documents:  # still valid manifests (Kubernetes' own schemas, strict)
        assert kubernetes_validate.validate(document, "1.33", strict=True) == "1.33"


def test_a_missing_chat_template_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert submit_k8s(tmp_path, "--flint-server-args", f"--chat-template-file {tmp_path / 'gone.jinja'}") == 2
    assert "gone.jinja: no such file" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_with_flint_tools_fenced_the_sidecar_serves_the_projects_fenced_template_from_the_configmap(
    tmp_path: Path,
) -> None:
    assert main(k8s_argv(tmp_path, "use_jeff: false\nflint_tools: fenced\n", "--ctx", "4096", shards=1)) == 0
    documents: list[dict[str, Any]] = list(yaml.safe_load_all((tmp_path / "m" / "k8s" / "matrix.yaml").read_text()))
    (config_map,) = [d for d in documents if d["kind"] == "ConfigMap"]
    assert "```json" in config_map["data"]["flint.jinja"]  # docker/flint-fenced/flint.jinja: a call is a fence
    (shards,) = [d for d in documents if d["kind"] == "Job" and d["metadata"]["name"].endswith("-shards")]
    (flint,) = shards["spec"]["template"]["spec"]["initContainers"][1:]
    assert flint["args"][-3:] == ["--jinja", "--chat-template-file", "/config/flint.jinja"]
