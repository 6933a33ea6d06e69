"""The Jobs of `bench submit k8s`, played in Docker with their own images, commands, mounts and probes, and a kubelet
of the test's own (tests/kubelet.py): the models Job; each shard's pod, its containers in one network
namespace, the init containers in order, every probe evaluated as the kubelet would (the sidecars' startup and
liveness probes run in their containers, against the real llama-server of Jeff's CPU image serving the small model
as Flint and as Jeff); Flint killed in the middle of shard 1's second run and restarted by the kubelet, which the
bench waits out and runs that run again; then the merge Job, whose wait reads the shards Job's status from a stand-in
of the API made of how the pods ended (tests/kube_api_stand_in.py). What only a cluster does (scheduling, pulling
from a registry, the claim, resources, the service-account token) is not played: docs/running.md lists it."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import small_task
import yaml
from kube_api_stand_in import ShardsJob, serve
from kubelet import Pod, probe_passes

from bench.cli import main
from bench.containers.engine import docker_client, remove_labelled
from bench.containers.names import OWNER_LABEL, BenchNames
from bench.llama.binaries import find_small_model
from bench.llama.cpu_image import ensure_llama_cpu_image
from bench.ownership import new_instance_id
from bench.results.append import read_rows
from bench.submit.image import ensure_bench_image

pytestmark = [pytest.mark.docker, pytest.mark.llama, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SHARDS, REPS, CTX = 2, 3, 2048
OLD_PROBE = {"httpGet": {"path": "/health", "port": 8080}}  # the manifests' first probe: no host, so the pod's IP
# The kubelet's first crash back-off is 10 s; what the test shows (Flint restarted after the kill, which the bench
# waits out and runs that run again) needs only a restart later than the kill, so the play's kubelet waits 2 s.
BACK_OFF_S = 2.0


def test_the_jobs_start_their_probes_pass_and_a_sidecar_restarted_mid_run_costs_only_that_run(tmp_path: Path) -> None:
    client = docker_client()
    bench, llama = ensure_bench_image(client, ROOT), ensure_llama_cpu_image(client, ROOT)
    documents = submit(tmp_path, bench, llama)
    names = BenchNames(new_instance_id())
    network = client.networks.create(f"{names.prefix}-pods", internal=True, labels=names.labels("k8s-network"))
    play = Play(client, names, network.name, tmp_path, documents)
    try:
        assert play.run_job("-models") == 0
        flint_events, sidecars = play.run_shard(0, kill_flint_in_run=2)
        assert play.run_shard(1)[0]
        merge_code, merge_logs = play.run_merge()
    finally:
        remove_labelled(client, f"{OWNER_LABEL}={names.instance}")  # its containers and network

    assert flint_events == ["startup probe passed", "exited", "restarted (1)", "startup probe passed", "stopped"]
    assert sidecars[1].liveness_passed > 0  # Jeff's liveness probes ran in his container all along, and passed
    results = tmp_path / "volume" / "m1"
    first = read_rows(results / "matrix-shard1of2.csv")
    assert [(r["rep"], r["stop_reason"] != "infra_error") for r in first] == [("1", True), ("3", True)]
    assert first[1]["error"].startswith("re-run: ") and "Flint (http://127.0.0.1:8080)" in first[1]["error"]
    assert len(list((results / "runs").glob("*.interrupted"))) == 1  # the attempt the restart cut short
    assert merge_code == 0, merge_logs[-3000:]  # --require-complete: every planned run delivered
    merged = read_rows(results / "merged.csv")
    assert sorted(r["rep"] for r in merged) == ["1", "2", "3"] and {r["shard"] for r in merged} == {"1/2", "2/2"}
    for row in merged:  # each run reached its sidecars at 127.0.0.1 and was graded in the pod
        assert (row["servers"], row["sandbox"], row["ctx"], row["hidden_total"]) == ("external", "local", "2048", "3")
    assert (results / "merged-shards.txt").read_text().splitlines() == [
        "shard 1/2 (index 0): succeeded (its bench exited 0)",
        "shard 2/2 (index 1): succeeded (its bench exited 0)",
    ]


def submit(tmp_path: Path, bench: str, llama: str) -> list[dict[str, Any]]:
    """The manifests of a small matrix: the small model as Flint and Jeff, from the volume's model cache."""
    model = find_small_model()
    settings = tmp_path / "settings.yaml"
    # threads 1: the play does not enforce the sidecars' CPU limits, which their thread count defaults to (4 and 2),
    # and two spinning servers and the bench share this machine's cores. The suite's small task (tests/small_task.py),
    # relative to the checkout, which is the pod's working folder too: its grading is one pytest.
    settings.write_text(
        yaml.safe_dump(
            {
                "use_jeff": True,
                "reps": REPS,
                "presets": ["part2"],
                "fixtures_root": str(small_task.ROOT.relative_to(ROOT)),
                "fixtures": [small_task.NAME],
                "max_steps": 1,
                "threads": 1,
                "flint_model": model.name,
                "jeff_model": model.name,
                "jeff_ctx": CTX,
                "agent_retries": 0,
                "sampling": {"temperature": 0.0, "seed": 42, "max_tokens": 8},
            }
        )
    )
    argv = [
        "submit",
        "k8s",
        "--shards",
        str(SHARDS),
        "--image",
        bench,
        "--flint-image",
        llama,
        "--jeff-image",
        llama,
        "--config",
        str(settings),
        "--results",
        str(tmp_path / "m1"),
        "--",
        "--ctx",
        str(CTX),
    ]
    assert main(argv) == 0
    (tmp_path / "volume" / "model-cache").mkdir(parents=True)
    shutil.copy(model, tmp_path / "volume" / "model-cache" / model.name)
    documents = list(yaml.safe_load_all((tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()))
    (group,) = {d["spec"]["template"]["spec"]["securityContext"]["fsGroup"] for d in documents if d["kind"] == "Job"}
    own_by_fs_group(tmp_path / "volume", group)
    (config_map,) = [d for d in documents if d["kind"] == "ConfigMap"]
    (tmp_path / "config").mkdir()
    for name, text in config_map["data"].items():
        (tmp_path / "config" / name).write_text(text)
    return documents


class Play:
    """The manifests' Jobs, one pod at a time, on host folders for the claim and the ConfigMap."""

    def __init__(self, client: Any, names: BenchNames, network: str, tmp_path: Path, documents: list[dict[str, Any]]):
        self.client, self.names, self.network, self.tmp_path = client, names, network, tmp_path
        self.jobs = {d["metadata"]["name"].rsplit("-", 1)[1]: d for d in documents if d["kind"] == "Job"}
        self.ended: dict[int, int] = {}  # index -> the bench's exit status, for the API's stand-in
        self.started = time.time()  # the shards Job's startTime, for the stand-in

    def spec(self, job: str) -> dict[str, Any]:
        found: dict[str, Any] = self.jobs[job.lstrip("-")]["spec"]["template"]["spec"]
        return found

    def mounts(self, container: dict[str, Any], job: str) -> dict[str, Any]:
        """The container's volumeMounts on host folders: the claim at tmp_path/volume (its subPath below), the
        ConfigMap's files at tmp_path/config, read-only as Kubernetes mounts it; an emptyDir as a tmpfs."""
        kinds = {v["name"]: next(k for k in v if k != "name") for v in self.spec(job)["volumes"]}
        folders = {"persistentVolumeClaim": "volume", "configMap": "config"}
        binds, tmpfs = {}, {}
        for mount in container.get("volumeMounts", []):
            if kinds[mount["name"]] == "emptyDir":
                tmpfs[mount["mountPath"]] = "mode=1777"
                continue
            host = self.tmp_path / folders[kinds[mount["name"]]] / mount.get("subPath", "")
            binds[str(host)] = {"bind": mount["mountPath"], "mode": "ro" if mount.get("readOnly") else "rw"}
        return {"volumes": binds, "tmpfs": tmpfs}

    def options(self, container: dict[str, Any], job: str, env: dict[str, str]) -> dict[str, Any]:
        values = {e["name"]: e["value"] for e in container.get("env", [])}
        security = security_options(self.spec(job).get("securityContext", {}), container.get("securityContext", {}))
        return {**self.mounts(container, job), "environment": values | env, **security}

    def run_job(self, job: str) -> int:
        """A Job of one plain container, to its end, on no network."""
        (container,) = self.spec(job)["containers"]
        run = self.client.containers.run(
            container["image"],
            container.get("args"),
            entrypoint=container["command"],
            detach=True,
            network_mode="none",
            labels=self.names.labels("k8s-job"),
            **self.options(container, job, {}),
        )
        code: int = run.wait(timeout=600)["StatusCode"]
        return code

    def run_shard(self, index: int, kill_flint_in_run: int | None = None) -> tuple[list[str], list[Any]]:
        """Pod `index` of the shards Job from its start to its end; Flint's kubelet events and the sidecars."""
        spec, env = self.spec("-shards"), {"JOB_COMPLETION_INDEX": str(index)}
        pod = Pod(self.client, self.names, self.network, back_off_s=BACK_OFF_S)
        pod_ip = pod.start(self.jobs["shards"]["spec"]["template"]["spec"]["containers"][0]["image"])
        for init in spec["initContainers"]:
            pod.run_init(init, pod_ip, **self.options(init, "-shards", env))
        flint = pod.sidecars[0]
        assert not probe_passes(OLD_PROBE, flint.container, pod_ip)  # the old probe: refused at the pod's IP
        killer = threading.Thread(target=self.kill_in_run, args=(flint, kill_flint_in_run), daemon=True)
        if kill_flint_in_run:
            killer.start()
        (bench,) = spec["containers"]
        container = pod.container(bench, **self.options(bench, "-shards", env))
        code = container.wait(timeout=900)["StatusCode"]
        logs = container.logs().decode(errors="replace")
        pod.stop()
        assert code == 0, logs[-3000:]
        self.ended[index] = code
        return pod.events.of("flint"), pod.sidecars

    def kill_in_run(self, flint: Any, run: int) -> None:
        """Flint's container killed once shard 1's run `run` has begun (its folder made), as a crash would."""
        runs = self.tmp_path / "volume" / "m1" / "runs"
        while len([p for p in runs.glob("*") if p.name != "servers"] if runs.is_dir() else []) < run:
            time.sleep(0.05)
        flint.container.kill()

    def run_merge(self) -> tuple[int, str]:
        """The merge Job's container, its wait answered by the API's stand-in (tests/kube_api_stand_in.py) on the
        network's gateway, from how the pods ended."""
        gateway = self.client.networks.get(self.network).attrs["IPAM"]["Config"][0]["Gateway"]
        shards = ShardsJob(self.jobs["shards"]["metadata"]["name"], SHARDS, start=self.started, ended=self.ended)
        (merge,) = self.spec("-merge")["containers"]
        with serve(shards, gateway) as url:
            run = self.client.containers.run(
                merge["image"],
                entrypoint=merge["command"],
                detach=True,
                network=self.network,
                labels=self.names.labels("k8s-merge"),
                **self.options(merge, "-merge", {"AGENTBENCH_KUBE_API": url}),
            )
            code: int = run.wait(timeout=600)["StatusCode"]
            return code, run.logs().decode(errors="replace")


def security_options(pod: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """A securityContext as Docker options: the user and group (the kubelet refuses runAsNonRoot with user 0 or
    none), fsGroup as a supplementary group, a read-only root, dropped capabilities, no privilege escalation.
    seccompProfile RuntimeDefault is the engine's default profile, which every container here has."""
    user, group = own.get("runAsUser", pod.get("runAsUser")), own.get("runAsGroup", pod.get("runAsGroup"))
    if own.get("runAsNonRoot", pod.get("runAsNonRoot")):
        assert user not in (None, 0), "runAsNonRoot with root: the kubelet would not start it"
    options: dict[str, Any] = {"user": f"{user}:{group}"} if user is not None else {}
    if "fsGroup" in pod:
        options["group_add"] = [str(pod["fsGroup"])]
    if own.get("readOnlyRootFilesystem"):
        options["read_only"] = True
    if "ALL" in own.get("capabilities", {}).get("drop", []):
        options["cap_drop"] = ["ALL"]
    if own.get("allowPrivilegeEscalation") is False:
        options["security_opt"] = ["no-new-privileges"]
    return options


def own_by_fs_group(folder: Path, group: int) -> None:
    """What the kubelet does to a volume for a pod's fsGroup: the group owns everything, may write it, and new
    files in its folders take that group."""
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, -1, group)
        extra = stat.S_IRWXG | (stat.S_ISGID | stat.S_IXOTH | stat.S_IROTH if path.is_dir() else 0)
        path.chmod(path.stat().st_mode | extra)
