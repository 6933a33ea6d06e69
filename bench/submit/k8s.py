"""`python -m bench submit k8s`: an Indexed Job of shards and a merge Job, as manifests in DIR/k8s/.

Each shard's pod runs Flint and Jeff as sidecars (init containers that keep running, so the bench starts once both
answer /health and the pod ends when the bench does) of the pinned llama-server images, and the bench, from an
image of this checkout, with `--servers external` at 127.0.0.1 and `--sandbox local` (a pod has no Docker). Flint
has the pod's GPU (`nvidia.com/gpu: 1`); Jeff, the 0.6B opinion model, runs on the pod's CPU from the CPU image.
Pod I (JOB_COMPLETION_INDEX, 0-based) runs shard I+1/N. The results, and the model cache, are on one
ReadWriteMany volume; the matrix's settings reach every pod as a ConfigMap. Each shard leaves a `.done` marker
when its bench has ended, however it ended; the merge Job waits for all N (or its deadline), then merges what is
there and lists the missing runs. `--apply` gives the files to `kubectl apply` when kubectl is on PATH.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bench.config import BenchConfig, describe
from bench.errors import ConfigError
from bench.llama.process import BENCH_FLAGS, GPU_FLAGS
from bench.submit.plan import Submission, merge_shell, shell_line

CONFIG_DIR = "/config"
VOLUME_ROOT = "/results"
CPU_IMAGE = "agentbench/llama-cpu:latest"  # compose.yaml's CPU server image
FLINT_PORT, JEFF_PORT = 8080, 8081


@dataclass(frozen=True)
class K8sOptions:
    image: str  # the bench: an image of this checkout where `python -m bench` runs
    name: str  # the matrix's name: its Jobs, ConfigMap and folder on the volume
    claim: str = "bench-results"  # the ReadWriteMany PersistentVolumeClaim
    storage: str = "50Gi"
    merge_wait_s: int = 7 * 24 * 3600


def pod_settings(settings: BenchConfig) -> BenchConfig:
    """The matrix as a pod runs it: the servers beside it at 127.0.0.1, the agent in the pod itself."""
    if len(windows(settings)) != 1:
        raise ConfigError("a pod serves Flint at one context size: submit one matrix per --ctx")
    jeff = f"http://127.0.0.1:{JEFF_PORT}" if settings.use_jeff else None
    update = {
        "servers": "external",
        "sandbox": "local",
        "flint_url": f"http://127.0.0.1:{FLINT_PORT}",
        "jeff_url": jeff,
    }
    try:
        return BenchConfig.model_validate(settings.model_dump() | update)
    except ValidationError as e:  # e.g. workers: 2, which external servers cannot have
        raise ConfigError(f"in a Kubernetes pod (external servers, local sandbox): {describe(e)}") from None


def windows(settings: BenchConfig) -> set[int]:
    return {ctx for _, _, ctx in settings.matrix()}


def plan_for(shards: int, options: K8sOptions) -> Submission:
    return Submission(shards, f"{VOLUME_ROOT}/{options.name}", f"{CONFIG_DIR}/bench.yaml")


def model_args(settings: BenchConfig, role: str) -> list[str]:
    model = settings.flint_model if role == "flint" else settings.jeff_model
    hub = settings.flint_hf if role == "flint" else settings.jeff_hf
    return ["-m", f"/cache/{model}"] if model else ["-hf", hub]  # a file of the volume's model-cache folder


def server(settings: BenchConfig, role: str, port: int) -> dict[str, Any]:
    ctx = min(windows(settings)) if role == "flint" else settings.jeff_ctx  # the one window (pod_settings)
    # as the bench starts its own servers: its flags, and a slot save path so that it can empty the prompt cache
    args = [*model_args(settings, role), "-c", str(ctx), "--host", "127.0.0.1", "--port", str(port), *BENCH_FLAGS]
    gpu = role == "flint"
    args += ["--slot-save-path", "/tmp", *(GPU_FLAGS if gpu else ["--reasoning", "off"])]
    args += settings.flint_server_args if gpu else settings.jeff_server_args  # the user's own, last
    resources = {"limits": {"nvidia.com/gpu": 1}} if gpu else {"requests": {"cpu": "1", "memory": "2Gi"}}
    return {
        "name": role,
        "image": settings.llama_image if gpu else CPU_IMAGE,
        "args": args,
        "restartPolicy": "Always",  # a sidecar: started before the bench, stopped after it
        "env": [{"name": "LLAMA_CACHE", "value": "/cache"}],
        "ports": [{"containerPort": port}],
        "startupProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": 5,
            "failureThreshold": int(settings.server_start_timeout_s // 5) + 1,
        },
        "resources": resources,
        "volumeMounts": [{"name": "results", "mountPath": "/cache", "subPath": "model-cache"}],
    }


def shard_command(plan: Submission) -> str:
    """The shell line of pod JOB_COMPLETION_INDEX: shard index+1 of N, then its `.done` marker."""
    run = shell_line(plan.run_argv('"$((JOB_COMPLETION_INDEX + 1))"'))
    marker = shell_line([f"{plan.results}/done/shard"]) + '"$((JOB_COMPLETION_INDEX + 1))".done'
    return (
        f"mkdir -p {shell_line([plan.results + '/done'])}; status=0; {run} || status=$?; touch {marker}; exit $status"
    )


def volumes(options: K8sOptions) -> list[dict[str, Any]]:
    return [
        {"name": "results", "persistentVolumeClaim": {"claimName": options.claim}},
        {"name": "config", "configMap": {"name": f"{options.name}-settings"}},
    ]


def bench_container(options: K8sOptions, script: str) -> dict[str, Any]:
    return {
        "name": "bench",
        "image": options.image,
        "command": ["bash", "-c", script],
        "volumeMounts": [
            {"name": "results", "mountPath": VOLUME_ROOT},
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        ],
    }


def job(name: str, options: K8sOptions, pod: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "agent-bench", "agent-bench/matrix": options.name}
    template = {"metadata": {"labels": labels}, "spec": {"restartPolicy": "Never", **pod, "volumes": volumes(options)}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels},
            "spec": {**spec, "template": template}}  # fmt: skip


def manifests(settings: BenchConfig, shards: int, options: K8sOptions, settings_text: str) -> list[dict[str, Any]]:
    plan = plan_for(shards, options)
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": options.claim},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": options.storage}}},
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{options.name}-settings"},
        "data": {"bench.yaml": settings_text},
    }
    sidecars = [server(settings, "flint", FLINT_PORT)]
    if settings.use_jeff:
        sidecars.append(server(settings, "jeff", JEFF_PORT))
    shard_pod = {"initContainers": sidecars, "containers": [bench_container(options, shard_command(plan))]}
    # Each index on its own: a failed shard is not retried (its runs are listed missing) and stops no other.
    indexed = {"completionMode": "Indexed", "completions": shards, "parallelism": shards,
               "backoffLimitPerIndex": 0, "maxFailedIndexes": shards}  # fmt: skip
    wait = [
        f"for _ in $(seq {options.merge_wait_s // 10}); do",
        f'  [ "$(ls {shell_line([plan.results + "/done"])} 2>/dev/null | wc -l)" -ge {shards} ] && break; sleep 10',
        "done",
    ]
    merge_pod = {"containers": [bench_container(options, "\n".join(["set -uo pipefail", *wait, *merge_shell(plan)]))]}
    return [
        claim,
        config_map,
        job(f"{options.name}-shards", options, shard_pod, indexed),
        job(f"{options.name}-merge", options, merge_pod, {"backoffLimit": 0}),
    ]


def write(documents: list[dict[str, Any]], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def command(documents: list[dict[str, Any]], folder: Path, apply: bool) -> int:
    path = write(documents, folder)
    kubectl = shutil.which("kubectl")
    if not apply:
        print(f"manifests: {path} (apply them with: kubectl apply -f {path})")
        return 0
    if kubectl is None:
        print(f"kubectl not found: manifests written to {path}; apply them with `kubectl apply -f {path}`")
        return 0
    return subprocess.run([kubectl, "apply", "-f", str(path)], timeout=300).returncode
