"""`python -m bench submit k8s`: a models Job, an Indexed Job of shards and a merge Job, as manifests in DIR/k8s/.

The models are fetched once, by the models Job, into the volume's model-cache folder; each shard's pod waits for
that (an init container), then runs Flint and Jeff as sidecars (init containers that keep running: the bench starts
once both pass their startup probe, the kubelet restarts one that exits or stops answering, and the pod ends when
the bench does) and the bench, from an image of this checkout, with `--servers external` at 127.0.0.1 and
`--sandbox local` (a pod has no Docker). Flint has the pod's GPU; Jeff, the 0.6B opinion model, runs on its CPU.
Pod I (JOB_COMPLETION_INDEX, 0-based) runs shard I+1/N. The results and the model cache are on one ReadWriteMany
volume; the matrix's settings reach every pod as a ConfigMap. The merge Job waits on the shards Job's own status
through the API (bench/submit/job_wait.py, with a Role that lets it read that Job and its pods), so a shard that
failed or never started is named within minutes; then it merges what is there and lists the missing runs. Every
Job has a deadline and is removed a while after it ended. `--apply` gives the files to `kubectl apply`.
"""

from __future__ import annotations

import copy
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bench.config import BenchConfig, describe
from bench.errors import ConfigError
from bench.llama.forced_tools import TEMPLATE_NAME
from bench.llama.serving import FENCED_DIR, TEMPLATE_FLAG, user_template, without_template
from bench.submit.k8s_models import models_container
from bench.submit.k8s_pods import (
    CONFIG_DIR,
    DISRUPTION_RETRIED,
    FLINT_PORT,
    JEFF_PORT,
    POD_SECURITY,
    VOLUME_ROOT,
    Images,
    bench_container,
    markers,
    matrix_folder,
    scratch_volumes,
    server,
    shard_command,
    wait_for_models,
)
from bench.submit.plan import GRACE_S, Submission, merge_shell, shell_line

HOUR, DAY = 3600, 24 * 3600


@dataclass(frozen=True)
class K8sOptions:
    images: Images
    name: str  # the matrix's name: its Jobs, ConfigMap, Role and folder on the volume
    namespace: str = "default"
    claim: str = "bench-results"  # the ReadWriteMany PersistentVolumeClaim
    storage: str = "50Gi"
    storage_class: str | None = None  # None: the cluster's default class
    deadline_s: int = 3 * DAY  # the shards Job's activeDeadlineSeconds: pods still running then are stopped
    start_deadline_s: int = 15 * 60  # a shard's pod not started by then (unschedulable, no image) is given up on
    models_deadline_s: int = 4 * HOUR  # the models Job's: a 12 GB download on a slow link
    ttl_s: int = 7 * DAY  # finished Jobs (and their pods' logs) are removed this long after
    flint_template: str | None = None  # the chat template Flint serves from the ConfigMap (flint_template)
    submission: str = field(default_factory=lambda: f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}")


def flint_template(settings: BenchConfig, checkout: Path) -> str | None:
    """The chat template Flint's sidecar serves, for the settings' ConfigMap (TEMPLATE_KEY): the user's own
    --chat-template-file, or the project's fenced one (`checkout`'s: this repository's) with flint_tools fenced;
    None: the model's own."""
    own = user_template(settings.flint_server_args)
    if own is None:
        return (checkout / FENCED_DIR / TEMPLATE_NAME).read_text() if settings.flint_tools == "fenced" else None
    if settings.flint_tools in ("forced", "fenced"):
        raise ConfigError(f"flint_server_args: {TEMPLATE_FLAG} is a template of your own: set flint_tools native")
    if not own.is_file():
        raise ConfigError(f"flint_server_args: {TEMPLATE_FLAG} {own}: no such file")
    return own.read_text()


def pod_settings(settings: BenchConfig) -> BenchConfig:
    """The matrix as a pod runs it: the servers beside it at 127.0.0.1, the agent in the pod itself; the user's chat
    template read from the settings' folder, where the ConfigMap puts it (so the rows key on the same file)."""
    if len({ctx for _, _, ctx in settings.matrix()}) != 1:
        raise ConfigError("a pod serves Flint at one context size: submit one matrix per --ctx")
    jeff = f"http://127.0.0.1:{JEFF_PORT}" if settings.use_jeff else None
    update: dict[str, object] = {
        "servers": "external",
        "sandbox": "local",
        "flint_url": f"http://127.0.0.1:{FLINT_PORT}",
        "jeff_url": jeff,
    }
    if user_template(settings.flint_server_args) is not None:
        pod_file = f"{CONFIG_DIR}/{TEMPLATE_NAME}"
        update["flint_server_args"] = [*without_template(settings.flint_server_args), TEMPLATE_FLAG, pod_file]
    try:
        return BenchConfig.model_validate(settings.model_dump() | update)
    except ValidationError as e:  # e.g. workers: 2, which external servers cannot have
        raise ConfigError(f"in a Kubernetes pod (external servers, local sandbox): {describe(e)}") from None


def plan_for(shards: int, options: K8sOptions) -> Submission:
    return Submission(shards, f"{VOLUME_ROOT}/{options.name}", f"{CONFIG_DIR}/bench.yaml")


def metadata(name: str, options: K8sOptions) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "agent-bench", "agent-bench/matrix": options.name}
    return {"name": name, "namespace": options.namespace, "labels": labels}


def volumes(options: K8sOptions) -> list[dict[str, Any]]:
    return [
        {"name": "results", "persistentVolumeClaim": {"claimName": options.claim}},
        {"name": "config", "configMap": {"name": f"{options.name}-settings"}},
    ]


def job(name: str, options: K8sOptions, pod: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A Job of `pod` that never retries a pod, removed `ttl_s` after it ended. A pod gets no service-account token
    unless it says so (the shards' pods run model-written commands), and meets Pod Security's restricted level
    (k8s_pods.POD_SECURITY, every container `secured`)."""
    meta = metadata(name, options)
    scratch = scratch_volumes([*pod.get("initContainers", []), *pod["containers"]])
    pod = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": copy.deepcopy(POD_SECURITY),
        **pod,
        "volumes": [*volumes(options), *scratch],
    }
    template = {"metadata": {"labels": meta["labels"]}, "spec": pod}
    spec = {**spec, "ttlSecondsAfterFinished": options.ttl_s, "template": template}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def storage(options: K8sOptions, settings_text: str) -> list[dict[str, Any]]:
    """The volume claim (results and models) and the ConfigMap of the matrix's settings (and of Flint's chat
    template, where it serves one of the settings' own: flint_template)."""
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": options.storage}},
    }
    if options.storage_class:
        claim_spec["storageClassName"] = options.storage_class
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(options.claim, options),
        "spec": claim_spec,
    }
    data = {"bench.yaml": settings_text}
    if options.flint_template:
        data[TEMPLATE_NAME] = options.flint_template
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(f"{options.name}-settings", options),
        "data": data,
    }
    return [claim, config_map]


def merge_access(options: K8sOptions) -> list[dict[str, Any]]:
    """The merge pod's identity, allowed to read the shards Job and list its pods, nothing else."""
    name, rbac = f"{options.name}-merge", "rbac.authorization.k8s.io/v1"
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(name, options),
        "automountServiceAccountToken": False,
    }
    rules = [
        {"apiGroups": ["batch"], "resources": ["jobs"], "resourceNames": [f"{options.name}-shards"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    role = {"apiVersion": rbac, "kind": "Role", "metadata": metadata(name, options), "rules": rules}
    binding = {
        "apiVersion": rbac,
        "kind": "RoleBinding",
        "metadata": metadata(name, options),
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": options.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }
    return [account, role, binding]


def models_job(settings: BenchConfig, plan: Submission, options: K8sOptions) -> dict[str, Any]:
    """The Job that fetches the hub models once into the volume's model cache (bench/submit/k8s_models.py). It
    retries no failure (the pod retries each fetch itself, and a pod retried after its failure marker would come
    too late) but runs the pod again after a disruption."""
    container = models_container(settings, options.images.jeff, markers(plan, options.submission))
    spec = {
        "backoffLimit": 0,
        "activeDeadlineSeconds": options.models_deadline_s,
        "podFailurePolicy": DISRUPTION_RETRIED,
    }
    return job(f"{options.name}-models", options, {"containers": [container]}, spec)


def shards_job(settings: BenchConfig, plan: Submission, options: K8sOptions) -> dict[str, Any]:
    images, sidecars = options.images, [server(settings, "flint", options.images.flint)]
    if settings.use_jeff:
        sidecars.append(server(settings, "jeff", images.jeff))
    init = [wait_for_models(plan, options.submission, images.bench, options.models_deadline_s), *sidecars]
    pod = {
        "initContainers": init,
        "containers": [
            bench_container("bench", images.bench, shard_command(plan, options.submission), matrix_folder(plan))
        ],
        "terminationGracePeriodSeconds": GRACE_S,  # a SIGTERM lets the row of a run that has just ended be written
    }
    # Each index on its own: a failed shard is not retried (its runs are listed missing) and stops no other.
    indexed = {
        "completionMode": "Indexed",
        "completions": plan.shards,
        "parallelism": plan.shards,
        "backoffLimitPerIndex": 0,
        "maxFailedIndexes": plan.shards,
        "activeDeadlineSeconds": options.deadline_s,
        # ...but a disruption is no failure: the index runs again, and its bench resumes its own file (--resume)
        "podFailurePolicy": DISRUPTION_RETRIED,
    }
    return job(f"{options.name}-shards", options, pod, indexed)


def merge_job(plan: Submission, options: K8sOptions) -> dict[str, Any]:
    wait = [
        "python",
        "-m",
        "bench.submit.job_wait",
        "--namespace",
        options.namespace,
        "--job",
        f"{options.name}-shards",
        "--shards",
        str(plan.shards),
        "--deadline-s",
        str(options.deadline_s + HOUR),
        "--start-deadline-s",
        str(options.start_deadline_s),
        "--markers",
        markers(plan, options.submission),
        "--report",
        f"{plan.results}/merged-shards.txt",
    ]
    script = ["set -uo pipefail", f"{shell_line(wait)} || exit $?", *merge_shell(plan)]
    pod = {
        "serviceAccountName": f"{options.name}-merge",
        "automountServiceAccountToken": True,  # to read the shards Job's status; this pod runs no model's command
        "containers": [bench_container("merge", options.images.bench, "\n".join(script))],
    }
    spec = {"backoffLimit": 0, "activeDeadlineSeconds": options.deadline_s + 3 * HOUR}
    return job(f"{options.name}-merge", options, pod, spec)


def manifests(settings: BenchConfig, shards: int, options: K8sOptions, settings_text: str) -> list[dict[str, Any]]:
    plan = plan_for(shards, options)
    return [
        *storage(options, settings_text),
        *merge_access(options),
        models_job(settings, plan, options),
        shards_job(settings, plan, options),
        merge_job(plan, options),
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
