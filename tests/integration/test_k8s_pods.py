"""The pods of `bench submit k8s`, played in Docker with the real bench image (`make bench-image`): each shard pod's
bench container runs the manifest's own command and mounts, beside scripted Flint and Jeff in a container whose
network namespace it shares, as a pod's sidecars share the pod's; then the merge Job's container merges what the
shards left on the volume. What only a cluster does (the kubelet's sidecar ordering and probes, the claim, pulling
from a registry) is not played: docs/running.md says so."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.cli import main
from bench.config import BenchConfig
from bench.containers.engine import docker_client, remove_labelled
from bench.containers.names import OWNER_LABEL, BenchNames
from bench.ownership import new_instance_id
from bench.results.append import read_rows
from bench.submit.image import ensure_bench_image
from bench.submit.k8s import FLINT_PORT, JEFF_PORT
from bench.testing import fake_llama

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SHARDS, REPS, CTX = 2, 3, 4096
SIDECARS = (
    f"python3 -m bench.testing.fake_llama --port {FLINT_PORT} --script /scripts/flint.json &"
    f" python3 -m bench.testing.fake_llama --port {JEFF_PORT} --script /scripts/jeff.json & wait"
)
HEALTH = (
    "import urllib.request\n"
    f"for port in ({FLINT_PORT}, {JEFF_PORT}): urllib.request.urlopen(f'http://127.0.0.1:{{port}}/health', timeout=2)"
)


def test_the_shard_pods_and_the_merge_job_deliver_the_whole_matrix_in_the_bench_image(tmp_path: Path) -> None:
    client = docker_client()
    image = ensure_bench_image(client)
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"use_jeff: true\nreps: {REPS}\npresets: [part3]\nfixtures: [todo_repo]\nmax_steps: 2\n")
    argv = ["submit", "k8s", "--shards", str(SHARDS), "--image", image, "--config", str(settings), "--results",
            str(tmp_path / "m1"), "--", "--ctx", str(CTX)]  # fmt: skip
    assert main(argv) == 0
    documents = list(yaml.safe_load_all((tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()))
    (config_map,) = [d for d in documents if d["kind"] == "ConfigMap"]
    shards, merge = ([d for d in documents if d["kind"] == "Job" and d["metadata"]["name"].endswith(s)][0] for s in
                     ("-shards", "-merge"))  # fmt: skip
    (tmp_path / "config").mkdir()
    for name, text in config_map["data"].items():
        (tmp_path / "config" / name).write_text(text)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "flint.json").write_text(json.dumps({"n_ctx": CTX, "default": fake_llama.prose("Done.")}))
    jeff = {"n_ctx": BenchConfig().jeff_ctx, "default": fake_llama.prose("yes: harmless")}
    (scripts / "jeff.json").write_text(json.dumps(jeff))
    names = BenchNames(new_instance_id())
    mounts = pod_mounts(shards, tmp_path)
    try:
        for index in range(SHARDS):
            sidecar = client.containers.run(
                image, ["bash", "-c", SIDECARS], detach=True, network_mode="none",
                volumes={str(scripts): {"bind": "/scripts", "mode": "ro"}}, labels=names.labels("k8s-sidecars"),
            )  # fmt: skip
            wait_healthy(sidecar)
            (bench,) = shards["spec"]["template"]["spec"]["containers"]
            code, logs = run_to_end(
                client, image, bench["command"], network_mode=f"container:{sidecar.id}", volumes=mounts,
                environment={"JOB_COMPLETION_INDEX": str(index)}, labels=names.labels("k8s-bench"),
            )  # fmt: skip
            assert code == 0, logs[-3000:]
            sidecar.remove(force=True)
        (merger,) = merge["spec"]["template"]["spec"]["containers"]
        code, logs = run_to_end(
            client, image, merger["command"], network_mode="none", volumes=pod_mounts(merge, tmp_path),
            labels=names.labels("k8s-merge"),
        )  # fmt: skip
        assert code == 0, logs[-3000:]  # --require-complete: no planned run is missing, and the report was made
    finally:
        remove_labelled(client, f"{OWNER_LABEL}={names.instance}")

    results = tmp_path / "volume" / "m1"
    assert sorted(p.name for p in (results / "done").iterdir()) == ["shard1.done", "shard2.done"]
    rows = read_rows(results / "merged.csv")
    assert sorted(r["rep"] for r in rows) == [str(rep) for rep in range(1, REPS + 1)]
    assert {r["shard"] for r in rows} == {"1/2", "2/2"}
    for row in rows:  # each run reached its sidecars at 127.0.0.1 and was graded in the pod
        assert (row["servers"], row["sandbox"], row["error"]) == ("external", "local", ""), row
        assert row["stop_reason"] == "done" and row["hidden_total"] == "6" and row["ctx"] == str(CTX)


def pod_mounts(job: dict[str, Any], tmp_path: Path) -> dict[str, dict[str, str]]:
    """The bench container's volumeMounts on host folders: the claim at tmp_path/volume, the ConfigMap's files at
    tmp_path/config (read-only, as Kubernetes mounts it)."""
    pod = job["spec"]["template"]["spec"]
    kinds = {v["name"]: ("volume" if "persistentVolumeClaim" in v else "config") for v in pod["volumes"]}
    (tmp_path / "volume").mkdir(exist_ok=True)
    (bench,) = pod["containers"]
    return {
        str(tmp_path / kinds[m["name"]]): {"bind": m["mountPath"], "mode": "ro" if m.get("readOnly") else "rw"}
        for m in bench["volumeMounts"]
    }


def wait_healthy(sidecar: Any, timeout_s: float = 60) -> None:
    """As the pod's startup probes do: the bench starts once Flint and Jeff answer /health."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sidecar.exec_run(["python3", "-c", HEALTH]).exit_code == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"the scripted servers never answered: {sidecar.logs().decode()[-2000:]}")


def run_to_end(client: Any, image: str, command: list[str], **options: Any) -> tuple[int, str]:
    container = client.containers.run(image, command, detach=True, **options)
    try:
        code = container.wait(timeout=600)["StatusCode"]
        return code, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
