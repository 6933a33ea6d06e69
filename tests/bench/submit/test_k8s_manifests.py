"""`python -m bench submit k8s`: the manifests validate against Kubernetes' own schemas (kubernetes-validate, offline,
strict: an unknown field fails), read as an operator would (images, pull policies, requests and limits, deadlines
and TTLs, tokens, the Role), and the pods' scripts, run by bash with a `python` that records its arguments, run
exactly the shard, wait and merge command lines. No Kubernetes cluster runs them here; the pods run in Docker, their
probes evaluated as the kubelet would, in tests/integration/test_k8s_pods.py."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kubernetes_validate
import pod_security
import pytest
import yaml
from submit_helpers import k8s_argv

from bench import ROOT
from bench.cli import build_parser, main, settings
from bench.config import BenchConfig
from bench.llama.cpu_image import llama_cpu_image
from bench.llama.process import free_port
from bench.submit.image import bench_image
from bench.submit.k8s_models import FETCH_ATTEMPTS, FETCH_WAIT_S, models_container
from bench.submit.k8s_pods import server_args, wait_for_models
from bench.submit.plan import GRACE_S, Submission

KUBERNETES = "1.33"  # the oldest release the manifests are kept valid for (sidecars and backoffLimitPerIndex: GA)
# A `python` that records its arguments, one per line, and a blank line after each call.
RECORDER = '#!/bin/sh\nfor arg; do printf "%s\\n" "$arg" >> "$CALLS"; done; echo >> "$CALLS"\n'
IMAGE = "registry.example/agent-bench:1"


def render(tmp_path: Path, *flags: str, run: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    settings = "use_jeff: true\nreps: 3\npresets: [part2, part3]\n"
    argv = k8s_argv(tmp_path, settings, "--ctx", "8192", *run, shards=3, image=IMAGE, results="m1", options=flags)
    assert main(argv) == 0
    return list(yaml.safe_load_all((tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()))


def by_kind(documents: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return found


def pod(documents: list[dict[str, Any]], suffix: str) -> dict[str, Any]:
    spec: dict[str, Any] = by_kind(documents, "Job", suffix)["spec"]["template"]["spec"]
    return spec


def containers(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    jobs = [d for d in documents if d["kind"] == "Job"]
    return [
        c
        for job in jobs
        for c in [
            *job["spec"]["template"]["spec"].get("initContainers", []),
            *job["spec"]["template"]["spec"]["containers"],
        ]
    ]


def test_the_manifests_validate_against_the_kubernetes_schemas_offline(tmp_path: Path) -> None:
    documents = render(tmp_path, "--storage-class", "nfs-rwx")
    kinds = ["ConfigMap", "Job", "Job", "Job", "PersistentVolumeClaim", "Role", "RoleBinding", "ServiceAccount"]
    assert sorted(d["kind"] for d in documents) == kinds
    for document in documents:
        assert kubernetes_validate.validate(document, KUBERNETES, strict=True) == KUBERNETES
    broken = by_kind(documents, "Job", "-shards")
    broken["spec"]["completionMode"] = "Indexd"
    broken["spec"]["template"]["spec"]["containers"][0]["comand"] = ["x"]
    with pytest.raises(kubernetes_validate.ValidationError):  # the check can fail: a typo is caught
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_as_an_operator_reads_them_every_container_is_pinned_bounded_and_every_job_ends(tmp_path: Path) -> None:
    documents = render(tmp_path, "--storage-class", "nfs-rwx", "--namespace", "bench")
    assert {d["metadata"]["namespace"] for d in documents} == {"bench"}
    for container in containers(documents):
        assert container["imagePullPolicy"] == "IfNotPresent", container["name"]
        assert not container["image"].endswith(":latest") and ":" in container["image"].rsplit("/", 1)[-1]
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][bound]), (container["name"], bound)
    for job in (d for d in documents if d["kind"] == "Job"):
        assert job["spec"]["activeDeadlineSeconds"] > 0 and job["spec"]["ttlSecondsAfterFinished"] > 0
    shards, merge = pod(documents, "-shards"), pod(documents, "-merge")
    assert shards["automountServiceAccountToken"] is False  # where the model's commands run
    assert pod(documents, "-models")["automountServiceAccountToken"] is False
    assert merge["automountServiceAccountToken"] is True and merge["serviceAccountName"] == "m1-merge"
    assert shards["terminationGracePeriodSeconds"] == GRACE_S
    assert by_kind(documents, "PersistentVolumeClaim")["spec"]["storageClassName"] == "nfs-rwx"
    assert "storageClassName" not in by_kind(render(tmp_path / "b"), "PersistentVolumeClaim")["spec"]
    flint = shards["initContainers"][1]
    assert flint["resources"]["limits"]["nvidia.com/gpu"] == flint["resources"]["requests"]["nvidia.com/gpu"] == 1


def matched_rule(policy: dict[str, Any], pod_conditions: list[str]) -> str:
    """The action of the first rule a failed pod matches, as the Job controller documents it ("Count" when none)."""
    for rule in policy["rules"]:
        if any(c["type"] in pod_conditions for c in rule.get("onPodConditions", [])):
            return str(rule["action"])
    return "Count"


def test_a_drained_node_runs_the_shard_again_and_a_failed_bench_does_not(tmp_path: Path) -> None:
    spec = next(d for d in render(tmp_path) if d["metadata"]["name"].endswith("-shards"))["spec"]
    assert spec["backoffLimitPerIndex"] == 0 and spec["template"]["spec"]["restartPolicy"] == "Never"
    # a node drain, a preemption or an eviction marks the pod DisruptionTarget: not counted, the index runs again
    assert matched_rule(spec["podFailurePolicy"], ["DisruptionTarget", "Ready"]) == "Ignore"
    # the bench's own failure (an exit, an OOM kill) is counted: with no retries per index, its runs are missing
    assert matched_rule(spec["podFailurePolicy"], ["Ready"]) == "Count"


def test_the_merge_may_read_the_shards_job_and_list_pods_and_nothing_else(tmp_path: Path) -> None:
    documents = render(tmp_path)
    role, binding = by_kind(documents, "Role"), by_kind(documents, "RoleBinding")
    assert role["rules"] == [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": ["m1-shards"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "m1-merge"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "m1-merge", "namespace": "default"}]
    assert by_kind(documents, "ServiceAccount")["metadata"]["name"] == "m1-merge"


@pytest.mark.llama  # Jeff's default image is named by a hash of the installed llama-server
@pytest.mark.usefixtures("child_processes")
def test_the_images_default_to_the_ones_this_checkout_builds_and_are_settable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "settings.yaml"
    config.write_text("use_jeff: true\n")
    argv = ["submit", "k8s", "--shards", "2", "--config", str(config), "--results", str(tmp_path / "m")]
    assert main([*argv, "--", "--ctx", "4096"]) == 0
    documents = list(yaml.safe_load_all((tmp_path / "m" / "k8s" / "matrix.yaml").read_text()))
    shards = pod(documents, "-shards")
    assert shards["containers"][0]["image"] == bench_image(ROOT)  # make bench-image's tag
    assert [c["image"] for c in shards["initContainers"][1:]] == [BenchConfig().llama_image, llama_cpu_image(ROOT)]
    given = render(
        tmp_path / "given", "--flint-image", "r.example/flint:b1", "--jeff-image", "r.example/jeff@sha256:ab"
    )
    assert [c["image"] for c in pod(given, "-shards")["initContainers"][1:]] == [
        "r.example/flint:b1",
        "r.example/jeff@sha256:ab",
    ]
    assert pod(given, "-models")["containers"][0]["image"] == "r.example/jeff@sha256:ab"  # it holds llama-server
    assert main([*argv, "--jeff-image", "r.example/jeff:latest", "--", "--ctx", "4096"]) == 2
    assert "--jeff-image r.example/jeff:latest: name a tag of fixed content (or a digest), not latest" in caplog.text


def probe_target(probe: dict[str, Any]) -> tuple[str, int]:
    """Where a probe lands, as the kubelet sends it: an httpGet to the pod's IP unless `host` is set; an exec probe
    in the container itself (the pod's network), where its URL says."""
    if "httpGet" in probe:
        return probe["httpGet"].get("host", "POD_IP"), int(probe["httpGet"]["port"])
    (url,) = [word for word in probe["exec"]["command"] if word.startswith("http://")]
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    return host, int(port)


def test_every_probe_reaches_its_server_where_it_listens(tmp_path: Path) -> None:
    for sidecar in pod(render(tmp_path), "-shards")["initContainers"][1:]:
        args = sidecar["args"]
        listening = (args[args.index("--host") + 1], int(args[args.index("--port") + 1]))
        assert listening == ("127.0.0.1", sidecar["ports"][0]["containerPort"])
        for kind in ("startupProbe", "livenessProbe"):
            assert probe_target(sidecar[kind]) == listening, (sidecar["name"], kind)
    # the probe the manifests had: an httpGet without host goes to the pod's IP, where nothing listens
    assert probe_target({"httpGet": {"path": "/health", "port": 8080}}) == ("POD_IP", 8080)


def test_the_threads_setting_is_each_sidecars_thread_count() -> None:
    for role, port in (("flint", 8080), ("jeff", 8081)):
        args = server_args(BenchConfig(threads=3), role, port)
        assert args[args.index("-t") + 1] == "3" and args.count("-t") == 1


@pytest.mark.usefixtures("child_processes")
def test_each_pod_runs_its_shard_with_the_servers_beside_it(tmp_path: Path) -> None:
    documents = render(tmp_path)
    shards = by_kind(documents, "Job", "-shards")
    assert shards["spec"]["completionMode"] == "Indexed" and shards["spec"]["completions"] == 3
    wait, flint, jeff = shards["spec"]["template"]["spec"]["initContainers"]
    assert wait["name"] == "wait-for-models" and "restartPolicy" not in wait  # runs to its end, first
    assert flint["restartPolicy"] == jeff["restartPolicy"] == "Always"  # sidecars: up before the bench, down after
    assert "nvidia.com/gpu" not in jeff["resources"]["limits"]
    assert flint["args"][flint["args"].index("-c") + 1] == "8192"  # the matrix's one window
    assert flint["args"][flint["args"].index("--port") + 1] == "8080"
    assert jeff["args"][jeff["args"].index("--port") + 1] == "8081"
    # a thread per CPU of the container's limit, not one per core of the node, which the limit's quota would throttle
    for sidecar in (flint, jeff):
        assert sidecar["args"][sidecar["args"].index("-t") + 1] == sidecar["resources"]["limits"]["cpu"]

    (bench,) = shards["spec"]["template"]["spec"]["containers"]
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
        (marker,) = (tmp_path / f"pod-{index}" / "volume" / "m1" / "submissions").glob(f"*/shard{index + 1}.status")
        assert marker.read_text() == "0\n"  # the bench's exit status, in this submission's folder


# A `python` that takes its time over a SIGTERM, as the bench does while it writes the row of a run just ended.
SLOW_TO_STOP = """#!/bin/sh
trap 'sleep 1; echo "stopped after TERM" >> "$CALLS"; exit 143' TERM
echo started >> "$CALLS"
while :; do sleep 0.1; done
"""


@pytest.mark.usefixtures("child_processes")
def test_the_pods_shell_hands_the_kubelets_sigterm_to_the_bench_and_waits_for_it(tmp_path: Path) -> None:
    (bench,) = pod(render(tmp_path), "-shards")["containers"]
    folder = tmp_path / "pod"
    folder.mkdir()
    (folder / "python").write_text(SLOW_TO_STOP)
    (folder / "python").chmod(0o755)
    script = bench["command"][2].replace("/results/", f"{folder}/volume/")
    env = os.environ | {
        "PATH": f"{folder}:{os.environ['PATH']}",
        "CALLS": str(folder / "calls"),
        "JOB_COMPLETION_INDEX": "0",
    }
    shell = subprocess.Popen(["bash", "-c", script], env=env)
    while not (folder / "calls").exists():
        time.sleep(0.02)
    shell.send_signal(signal.SIGTERM)  # as the kubelet signals the container's PID 1
    assert shell.wait(timeout=30) == 143
    assert (folder / "calls").read_text().splitlines() == ["started", "stopped after TERM"]
    (marker,) = (folder / "volume" / "m1" / "submissions").glob("*/shard1.status")
    assert marker.read_text() == "143\n"


@pytest.mark.usefixtures("child_processes")
def test_the_merge_job_waits_on_the_shards_job_then_merges_the_shards_that_delivered(tmp_path: Path) -> None:
    documents = render(tmp_path)
    merge = pod(documents, "-merge")["containers"][0]
    volume = tmp_path / "volume"
    matrix = volume / "m1"
    matrix.mkdir(parents=True)
    for index in (1, 3):  # shard 2 ended without a file
        (matrix / f"matrix-shard{index}of3.csv").write_text("x\n")
    wait, merged = run_pod_script(tmp_path / "merge", merge["command"], {}, volume=volume)  # no merged.csv: no report
    assert wait[:2] == ["-m", "bench.submit.job_wait"]
    assert [wait[wait.index(flag) + 1] for flag in ("--job", "--shards", "--namespace")] == [
        "m1-shards",
        "3",
        "default",
    ]
    folder = wait[wait.index("--markers") + 1].replace(f"{volume}/", "/results/")
    assert folder.startswith("/results/m1/submissions/")
    assert folder in pod(documents, "-shards")["containers"][0]["command"][2]  # where the shards leave their status
    assert merged[:3] == ["-m", "bench", "merge"]
    assert merged[3:5] == [f"{matrix}/matrix-shard1of3.csv", f"{matrix}/matrix-shard3of3.csv"]
    assert merged[merged.index("--out") + 1] == f"{matrix}/merged.csv" and "--require-complete" in merged
    assert merged[merged.index("--shards") + 1] == "3"


def test_a_second_submission_of_the_matrix_has_markers_of_its_own(tmp_path: Path) -> None:
    first, second = render(tmp_path), render(tmp_path)  # the same matrix into the same folder, submitted again
    folders = {
        pod(d, "-merge")["containers"][0]["command"][2].split("--markers ")[1].split()[0] for d in (first, second)
    }
    assert len(folders) == 2


@pytest.mark.usefixtures("child_processes")
def test_the_pods_wait_for_the_models_job_and_fail_when_it_did(tmp_path: Path) -> None:
    plan = Submission(2, str(tmp_path / "m1"), "/config/bench.yaml")
    folder = tmp_path / "m1" / "submissions" / "s1"

    def wait(deadline_s: int) -> subprocess.CompletedProcess[str]:
        script = wait_for_models(plan, "s1", IMAGE, deadline_s)["command"][2]
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)

    assert wait(0).returncode == 1 and "not fetched within 0 s" in wait(0).stdout
    folder.mkdir(parents=True)
    (folder / "models.failed").write_text("llama-server could not fetch x/y:Q8\n")
    failed = wait(600)
    assert failed.returncode == 1 and "the models Job failed: llama-server could not fetch x/y:Q8" in failed.stdout
    (folder / "models.done").touch()
    assert wait(600).returncode == 0


# A llama-server that records how it was started, files the model in LLAMA_CACHE as llama.cpp does (the blob named by
# the sha256 the hub listed, a snapshot's link to it; a file already there is used as it is) and serves /health (the
# scripted server), or exits at once. A cut/ model's first download is cut short; a corrupt/ model's is always wrong.
FAKE_SERVER = """#!/bin/sh
echo "$@" >> "$CALLS"
case "$2" in bad/*) exit 1 ;; esac
repo="$LLAMA_CACHE/models--$(echo "${2%%:*}" | sed 's#/#--#')"
mkdir -p "$repo/blobs" "$repo/snapshots/c0" "$repo/refs"
weights="the weights of $2"
oid=$(printf %s "$weights" | sha256sum | cut -d' ' -f1)
case "$2" in
  cut/*) [ -e "$repo/.cut" ] || { touch "$repo/.cut"; weights="the weig"; } ;;
  corrupt/*) weights="the weights of someone else" ;;
esac
if [ ! -e "$repo/snapshots/c0/model.gguf" ]; then
  printf %s "$weights" > "$repo/blobs/$oid"
  ln -s "../../blobs/$oid" "$repo/snapshots/c0/model.gguf"
fi
echo c0 > "$repo/refs/main"
exec "$PYTHON" -m bench.testing.fake_llama --port "$PORT"
"""


def models_pod(folder: Path, container: dict[str, Any]) -> Any:
    """A runner of the models container's script in `folder` (the volume at folder/v), with the fake llama-server."""
    folder.mkdir()
    (folder / "llama-server").write_text(FAKE_SERVER)
    (folder / "llama-server").chmod(0o755)
    port = free_port()  # the pod's own 8090 is this host's: another free one
    env = {e["name"]: e["value"].replace("/results/", f"{folder}/v/") for e in container["env"]}
    env |= {"CALLS": str(folder / "calls"), "PYTHON": sys.executable, "PORT": str(port)}

    def run(text: str) -> subprocess.CompletedProcess[str]:
        text = text.replace("/opt/llama/llama-server", str(folder / "llama-server"))
        text = text.replace("/results/", f"{folder}/v/")
        text = text.replace(":8090/", f":{port}/").replace(f"sleep {FETCH_WAIT_S}", "sleep 0")
        return subprocess.run(["sh", "-c", text], env=os.environ | env, capture_output=True, text=True, timeout=120)

    return run


@pytest.mark.usefixtures("child_processes")
def test_the_models_job_fetches_each_hub_model_once_then_marks_the_submission(tmp_path: Path) -> None:
    documents = render(tmp_path)
    (models,) = pod(documents, "-models")["containers"]
    script = models["command"][2]
    folder = tmp_path / "job"
    run = models_pod(folder, models)
    assert run(script).returncode == 0
    calls = (folder / "calls").read_text().splitlines()
    assert [call.split()[1] for call in calls] == [BenchConfig().flint_hf, BenchConfig().jeff_hf]
    assert all("-ngl 0 --no-warmup" in call for call in calls)
    (done,) = (folder / "v" / "m1" / "submissions").glob("*/models.done")
    assert (folder / "v" / "model-cache").is_dir()  # made here, so the servers' subPath is not the kubelet's
    bad = run(script.replace(BenchConfig().jeff_hf, "bad/model:Q8"))
    assert bad.returncode == 1
    # tried FETCH_ATTEMPTS times in the pod; the marker every shard gives up on comes after the last only
    tries = [call for call in (folder / "calls").read_text().splitlines() if "bad/model:Q8" in call]
    assert len(tries) == FETCH_ATTEMPTS == 3 and bad.stdout.count("could not fetch bad/model:Q8 (attempt") == 3
    (failed,) = (folder / "v" / "m1" / "submissions").glob("*/models.failed")
    assert "could not fetch bad/model:Q8 in 3 attempts" in failed.read_text()


@pytest.mark.usefixtures("child_processes")
def test_the_models_job_checks_each_file_against_the_hubs_digest_and_fetches_a_bad_one_anew(tmp_path: Path) -> None:
    def job(hub: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        settings = BenchConfig(use_jeff=False, flint_hf=hub)
        container = models_container(settings, IMAGE, f"/results/m1/submissions/{hub.split('/')[0]}")
        folder = tmp_path / hub.split("/")[0]
        done = models_pod(folder, container)(container["command"][2])
        return done, folder / "v" / "model-cache" / f"models--{hub.split(':')[0].replace('/', '--')}"

    cut, repo = job("cut/model:Q8")  # a download cut short: refused, removed, fetched again, checked
    assert cut.returncode == 0, cut.stdout
    assert cut.stdout.count("the download of model.gguf is corrupted or cut short:") == 1
    (blob,) = (repo / "blobs").iterdir()
    assert (
        hashlib.sha256(blob.read_bytes()).hexdigest() == blob.name == (repo / "snapshots/c0/model.gguf").resolve().name
    )
    corrupt, repo = job("corrupt/model:Q8")  # never what the hub listed: the last attempt marks the Job failed
    assert corrupt.returncode == 1 and corrupt.stdout.count("is corrupted or cut short:") == FETCH_ATTEMPTS
    assert "the hub listed " + hashlib.sha256(b"the weights of corrupt/model:Q8").hexdigest() in corrupt.stdout
    assert list(repo.rglob("model.gguf")) == [] and list((repo / "blobs").iterdir()) == []  # nothing bad is kept
    assert (tmp_path / "corrupt" / "v" / "m1" / "submissions" / "corrupt" / "models.failed").is_file()


@pytest.mark.usefixtures("child_processes")
def test_a_disrupted_models_pod_leaves_no_failure_and_only_a_disruption_runs_it_again(tmp_path: Path) -> None:
    documents = render(tmp_path)
    spec = by_kind(documents, "Job", "-models")["spec"]
    assert spec["backoffLimit"] == 0  # a failure is the pod's last word: its retries are its own
    assert matched_rule(spec["podFailurePolicy"], ["DisruptionTarget"]) == "Ignore"
    assert matched_rule(spec["podFailurePolicy"], ["Ready"]) == "Count"
    (models,) = pod(documents, "-models")["containers"]
    folder = tmp_path / "job"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "llama-server").write_text("#!/bin/sh\nexec sleep 60\n")  # a fetch that takes its time
    (folder / "bin" / "llama-server").chmod(0o755)
    script = models["command"][2].replace("/opt/llama/llama-server", str(folder / "bin" / "llama-server"))
    script = script.replace("/results/", f"{folder}/v/").replace(":8090/", f":{free_port()}/")
    shell = subprocess.Popen(["sh", "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not list((folder / "v" / "m1" / "submissions").glob("*")):
        time.sleep(0.05)
    time.sleep(0.5)
    shell.send_signal(signal.SIGTERM)  # the kubelet's, on a drain
    assert shell.wait(timeout=30) == 143
    assert list((folder / "v" / "m1" / "submissions").glob("*/models.*")) == []  # no shard gives up


def test_every_pod_is_admitted_by_a_restricted_namespace_and_writes_only_where_it_must(tmp_path: Path) -> None:
    documents = render(tmp_path)
    assert "securityContext: *id" not in (tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()  # a copy each
    for suffix in ("-models", "-shards", "-merge"):
        assert pod_security.violations(by_kind(documents, "Job", suffix)["spec"]["template"]) == [], suffix
    for container in containers(documents):  # and where possible, a read-only root with a /tmp of its own
        assert container["securityContext"]["readOnlyRootFilesystem"] is True, container["name"]
        tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        assert tmp == [{"name": f"tmp-{container['name']}", "mountPath": "/tmp"}]
    shards = pod(documents, "-shards")
    writable = {
        c["name"]: [(m["mountPath"], m.get("subPath")) for m in c["volumeMounts"] if m["name"] == "results"]
        for c in [*shards["initContainers"], *shards["containers"]]
    }
    read_only = [m for c in shards["initContainers"] for m in c["volumeMounts"] if m["name"] == "results"]
    assert all(m.get("readOnly") for m in read_only)
    # the bench, which runs the model's commands, writes the matrix's folder alone; nothing else writes the volume
    assert writable["bench"] == [("/results/m1", "m1")]


@pytest.mark.parametrize(
    "settings",
    [
        "use_jeff: false\n",
        "use_jeff: true\nflint_tools: fenced\n",
        "use_jeff: true\nflint_model: flint.gguf\njeff_model: jeff.gguf\n",  # no models Job's fetch to make
    ],
)
def test_the_pods_of_every_kind_of_matrix_are_admitted_and_run_as_a_user_that_is_not_root(
    tmp_path: Path, settings: str
) -> None:
    assert main(k8s_argv(tmp_path, settings, "--ctx", "8192", results="m1")) == 0
    documents = list(yaml.safe_load_all((tmp_path / "m1" / "k8s" / "matrix.yaml").read_text()))
    jobs = [d for d in documents if d["kind"] == "Job"]
    assert len(jobs) == 3 and [pod_security.violations(job["spec"]["template"]) for job in jobs] == [[], [], []]
    # The llama-server images name no USER (docker/llama-cpu.Dockerfile, llama-cuda.Dockerfile): they run as root
    # unless told otherwise, and the kubelet refuses runAsNonRoot then. Every container is given a user of its own.
    for job in jobs:
        spec = job["spec"]["template"]["spec"]
        for container in pod_security.containers(spec):
            user = container["securityContext"].get("runAsUser", spec["securityContext"].get("runAsUser"))
            assert isinstance(user, int) and user > 0, container["name"]


def shards_pod(tmp_path: Path) -> dict[str, Any]:
    template: dict[str, Any] = by_kind(render(tmp_path), "Job", "-shards")["spec"]["template"]
    assert pod_security.violations(template) == []
    return template


def bench_security(template: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = template["spec"]["containers"][0]["securityContext"]
    return found


# Each control of the level, broken once in the shards' pod, and what the check says of it.
BROKEN: list[tuple[str, Any, list[str]]] = [
    ("host network", lambda t: t["spec"].update(hostNetwork=True), ["hostNetwork"]),
    ("root on the pod", lambda t: t["spec"]["securityContext"].update(runAsUser=0), ["runAsUser 0"]),
    ("non-root unset", lambda t: t["spec"]["securityContext"].pop("runAsNonRoot"), ["runAsNonRoot unset"]),
    ("root allowed", lambda t: bench_security(t).update(runAsNonRoot=False), ["bench: runAsNonRoot false"]),
    ("seccomp unset", lambda t: t["spec"]["securityContext"].pop("seccompProfile"), ["seccompProfile unset"]),
    (
        "seccomp unconfined",
        lambda t: bench_security(t).update(seccompProfile={"type": "Unconfined"}),
        ["bench: seccompProfile Unconfined"],
    ),
    ("privileged", lambda t: bench_security(t).update(privileged=True), ["bench: privileged"]),
    ("escalation", lambda t: bench_security(t).pop("allowPrivilegeEscalation"), ["bench: allowPrivilegeEscalation"]),
    ("nothing dropped", lambda t: bench_security(t).pop("capabilities"), ["bench: capabilities: ALL not dropped"]),
    (
        "a capability added",
        lambda t: bench_security(t)["capabilities"].update(add=["SYS_ADMIN"]),
        ["bench: capabilities added: SYS_ADMIN"],
    ),
    ("proc unmasked", lambda t: bench_security(t).update(procMount="Unmasked"), ["bench: procMount Unmasked"]),
    ("SELinux", lambda t: bench_security(t).update(seLinuxOptions={"type": "spc_t"}), ["bench: seLinuxOptions"]),
    (
        "AppArmor",
        lambda t: t["spec"]["securityContext"].update(appArmorProfile={"type": "Unconfined"}),
        ["appArmorProfile Unconfined"],
    ),
    (
        "AppArmor annotation",
        lambda t: t["metadata"].update(
            annotations={"container.apparmor.security.beta.kubernetes.io/bench": "unconfined"}
        ),
        ["annotation container.apparmor.security.beta.kubernetes.io/bench: unconfined"],
    ),
    (
        "host process",
        lambda t: bench_security(t).update(windowsOptions={"hostProcess": True}),
        ["bench: windowsOptions.hostProcess"],
    ),
    (
        "host port",
        lambda t: t["spec"]["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 80}]),
        ["bench: hostPort 80"],
    ),
    (
        "unsafe sysctl",
        lambda t: t["spec"]["securityContext"].update(sysctls=[{"name": "kernel.msgmax", "value": "1"}]),
        ["sysctl kernel.msgmax"],
    ),
    (
        "host path",
        lambda t: t["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}}),
        ["volume host: hostPath"],
    ),
]


@pytest.mark.parametrize(("control", "breaks", "said"), BROKEN, ids=[row[0] for row in BROKEN])
def test_the_restricted_check_names_each_control_a_pod_breaks(
    tmp_path: Path, control: str, breaks: Any, said: list[str]
) -> None:
    template = shards_pod(tmp_path)
    breaks(template)
    assert pod_security.violations(template) == said, control


def test_a_matrix_of_several_windows_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = k8s_argv(tmp_path, "use_jeff: false\n", "--ctx", "4096,8192")
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


# The fields the Docker play reads and acts on (tests/integration/test_k8s_pods.py, tests/kubelet.py): the
# objects' structure, the ConfigMap's files, each container's image, command, args, env and mounts, the init
# containers in order, a sidecar's restartPolicy, its probes and their timings; the main container run once.
PLAYED = {
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "spec",
    "template",
    "data",
    "containers",
    "initContainers",
    "image",
    "command",
    "args",
    "env",
    "value",
    "volumeMounts",
    "mountPath",
    "subPath",
    "readOnly",
    "volumes",
    "configMap",
    "persistentVolumeClaim",
    "claimName",
    "restartPolicy",
    "startupProbe",
    "livenessProbe",
    "exec",
    "periodSeconds",
    "timeoutSeconds",
    "failureThreshold",
    # the securityContext as Docker options (tests/integration/test_k8s_pods.py security_options), an emptyDir as a
    # tmpfs; seccompProfile RuntimeDefault is the engine's default profile
    "securityContext",
    "runAsNonRoot",
    "runAsUser",
    "runAsGroup",
    "fsGroup",
    "seccompProfile",
    "type",
    "allowPrivilegeEscalation",
    "capabilities",
    "drop",
    "readOnlyRootFilesystem",
    "emptyDir",
}


def untested_paragraph() -> str:
    """docs/running.md's list of what neither a cluster nor the play ran."""
    text = (Path(__file__).parents[3] / "docs" / "running.md").read_text()
    start = text.index("**No Kubernetes cluster ran these manifests.**")
    return text[start : text.index("\n\n", start)]


# The objects the play does not make at all (a host folder stands for the claim, the stand-in API takes no token).
UNPLAYED_KINDS = {"PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding"}


def unlisted(value: Any, kind: str, listed: set[str]) -> set[str]:
    """The field names below `value` that the play does not exercise and the docs do not list (nor their parent)."""
    if isinstance(value, list):
        return {name for item in value for name in unlisted(item, kind, listed)}
    if not isinstance(value, dict):
        return set()
    found = set()
    for name, child in value.items():
        if name in listed or name == "data":  # data: the ConfigMap's file names, each written out by the play
            continue
        if name not in PLAYED:
            found.add(f"{kind}: {name}")
        found |= unlisted(child, kind, listed)
    return found


def test_every_field_the_play_does_not_exercise_is_listed_as_untested_in_the_docs(tmp_path: Path) -> None:
    paragraph = untested_paragraph()
    listed = {quoted.split(":")[0].split(".")[-1] for quoted in re.findall(r"`([^`]+)`", paragraph)}
    assert set(re.findall(r"[A-Za-z]+", paragraph)) >= UNPLAYED_KINDS  # each named as a whole
    documents = [d for d in render(tmp_path, "--storage-class", "nfs-rwx") if d["kind"] not in UNPLAYED_KINDS]
    assert {name for d in documents for name in unlisted(d, d["kind"], listed)} == set()
    listed.discard("backoffLimitPerIndex")  # the check can fail: a field dropped from the list is named
    assert unlisted(by_kind(documents, "Job", "-shards"), "Job", listed) == {"Job: backoffLimitPerIndex"}
