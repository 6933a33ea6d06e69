"""The containers of `bench submit k8s`'s pods: Flint and Jeff as sidecars of each shard's bench, the bench itself,
the wait for the models, and what every container gets (an explicit pull policy, requests and limits).

A server's command line is made in one place, `server_args`, as the bench starts its own servers (its flags, a slot
save path so that it can empty the prompt cache); flags of a role's own are added there.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.llama.process import BENCH_FLAGS, GPU_FLAGS
from bench.llama.serving import FENCED, template_args, user_template
from bench.submit.plan import Submission, shell_line

FLINT_PORT, JEFF_PORT = 8080, 8081
CACHE_DIR = "/cache"  # the volume's model-cache folder, in the servers' containers
VOLUME_ROOT = "/results"
CONFIG_DIR = "/config"
# Images are tagged by their content (bench/submit/image.py, bench/llama/cuda_image.py, cpu_image.py): a tag never
# names other bytes, so a node pulls it once. (A `:latest` image would default to Always.)
PULL_POLICY = "IfNotPresent"
# What each container asks for and may use. Flint's host memory holds the model's mapped file beside the GPU's copy.
RESOURCES: dict[str, dict[str, dict[str, Any]]] = {
    "flint": {
        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
        "limits": {"cpu": "4", "memory": "24Gi", "nvidia.com/gpu": 1},
    },
    "jeff": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
    "bench": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}},
    "wait-for-models": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
    "merge": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
    "models": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}},
}


# Pod Security's "restricted" level, which every pod meets: a user that is not root (the sandbox image's `agent`,
# docker/sandbox.Dockerfile; any image runs as it) whose group owns the volume (fsGroup), the runtime's seccomp
# profile; in every container no privilege escalation, no capability and a read-only root, with a /tmp of its own
# (an emptyDir, also its HOME) as the one writable folder beside the mounts it needs.
RUN_AS = 10001
POD_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": RUN_AS,
    "runAsGroup": RUN_AS,
    "fsGroup": RUN_AS,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
}


# A disruption (a node drained, a pod preempted or evicted) sets the pod's DisruptionTarget condition: not counted
# as a failure, the pod runs again; any other failure counts.
DISRUPTION_RETRIED = {
    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
}


def secured(container: dict[str, Any]) -> dict[str, Any]:
    """`container` with the restricted securityContext, its own /tmp and HOME there."""
    tmp = {"name": f"tmp-{container['name']}", "mountPath": "/tmp"}
    env = [*container.get("env", []), {"name": "HOME", "value": "/tmp"}]
    mounts = [*container.get("volumeMounts", []), tmp]
    # a copy each: shared objects would be written as YAML anchors and aliases
    return container | {"env": env, "volumeMounts": mounts, "securityContext": copy.deepcopy(CONTAINER_SECURITY)}


def scratch_volumes(containers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The emptyDir behind each container's own /tmp."""
    names = [m["name"] for c in containers for m in c.get("volumeMounts", []) if m["name"].startswith("tmp-")]
    return [{"name": name, "emptyDir": {}} for name in names]


@dataclass(frozen=True)
class Images:
    bench: str  # an image of this checkout where `python -m bench` runs (make bench-image)
    flint: str  # llama-server with CUDA (make gpu-image: llama_image)
    jeff: str  # llama-server for the CPU (make bench-image builds it too)


def markers(plan: Submission, submission: str) -> str:
    """The folder of one submission's markers on the volume: a resubmission of the matrix never reads another's."""
    return f"{plan.results}/submissions/{submission}"


def server_args(settings: BenchConfig, role: str, port: int) -> list[str]:
    """llama-server's flags for `role`, as the bench starts its own servers: the one place a role's flags are made."""
    ctx = min(settings.ctx) if role == "flint" else settings.jeff_ctx  # Flint's one window (k8s.pod_settings)
    model = settings.flint_model if role == "flint" else settings.jeff_model
    hub = settings.flint_hf if role == "flint" else settings.jeff_hf
    args = ["-m", f"{CACHE_DIR}/{model}"] if model else ["-hf", hub]  # a file of the volume's model-cache folder
    args += ["-c", str(ctx), "--host", "127.0.0.1", "--port", str(port), *BENCH_FLAGS, "--slot-save-path", "/tmp"]
    args += GPU_FLAGS if role == "flint" else ["--reasoning", "off"]
    # Threads as set, else as many as the container's CPU limit: llama.cpp starts one per core of the node, and the
    # limit's quota throttles them all (its threads spin while they wait).
    args += ["-t", str(settings.threads or RESOURCES[role]["limits"]["cpu"])]
    if role == "jeff":
        return args + settings.jeff_server_args  # the user's own, last
    return args + template_flags(settings) + settings.flint_server_args


def template_flags(settings: BenchConfig) -> list[str]:
    """Flint's flags for the chat template it serves from the pod's settings folder (k8s.flint_template): --jinja
    beside the user's own --chat-template-file (pod_settings points it there), the fenced template's flags with
    flint_tools fenced; none for the model's own."""
    if user_template(settings.flint_server_args) is not None:
        return ["--jinja"]
    return template_args(FENCED, Path(CONFIG_DIR)) if settings.flint_tools == "fenced" else []


def health_probe(port: int, period_s: int, failures: int, timeout_s: int) -> dict[str, Any]:
    # An exec probe, because the servers listen on 127.0.0.1 alone (no other pod reaches the GPU's server or its
    # slots): an httpGet probe goes to the pod IP, where nothing listens, and `host: 127.0.0.1` is the node's own
    # loopback. exec runs in the container, whose network is the pod's, so curl reaches the server as the bench
    # does; both llama-server images carry curl for their HEALTHCHECK.
    check = ["curl", "-fsS", "-o", "/dev/null", "--max-time", str(timeout_s), f"http://127.0.0.1:{port}/health"]
    return {
        "exec": {"command": check},
        "periodSeconds": period_s,
        "timeoutSeconds": timeout_s,
        "failureThreshold": failures,
    }


def server(settings: BenchConfig, role: str, image: str) -> dict[str, Any]:
    """A sidecar (an init container that keeps running: the bench starts once its startup probe passes, and the
    kubelet restarts it whenever it exits or stops answering, which the bench waits out: bench/run/server_return.py)."""
    port = FLINT_PORT if role == "flint" else JEFF_PORT
    served = role == "flint" and template_flags(settings)  # its chat template is a file of the settings' ConfigMap
    template = [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}] if served else []
    return secured(
        {
            "name": role,
            "image": image,
            "imagePullPolicy": PULL_POLICY,
            "args": server_args(settings, role, port),
            "restartPolicy": "Always",
            "env": [{"name": "LLAMA_CACHE", "value": CACHE_DIR}, {"name": "LLAMA_ARG_OFFLINE", "value": "1"}],
            "ports": [{"containerPort": port}],
            # probed every second while it loads: the bench starts as soon as the server answers, not up to 5 s later
            "startupProbe": health_probe(port, 1, int(settings.server_start_timeout_s) + 1, 3),
            # a server silent for a minute is restarted: long prompts do not stop /health, which has a thread of its own
            "livenessProbe": health_probe(port, 10, 6, 5),
            "resources": RESOURCES[role],
            # the models, read only: the servers run offline on what the models Job fetched
            "volumeMounts": [
                {"name": "results", "mountPath": CACHE_DIR, "subPath": "model-cache", "readOnly": True},
                *template,
            ],
        }
    )


def bench_container(name: str, image: str, script: str, results: dict[str, Any] | None = None) -> dict[str, Any]:
    """A container of the bench's image running `script`, the volume mounted as `results` says (default: all of it,
    writable), the settings read only."""
    mount = results or {"name": "results", "mountPath": VOLUME_ROOT}
    return secured(
        {
            "name": name,
            "image": image,
            "imagePullPolicy": PULL_POLICY,
            "command": ["bash", "-c", script],
            "resources": RESOURCES[name],
            "volumeMounts": [mount, {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
        }
    )


def matrix_folder(plan: Submission) -> dict[str, Any]:
    """The shard's bench mount: the matrix's own folder of the volume and nothing else (not the models, not other
    matrices). It exists by then: the models Job made it before the pod's servers could start."""
    return {"name": "results", "mountPath": plan.results, "subPath": plan.results.removeprefix(VOLUME_ROOT + "/")}


def wait_for_models(plan: Submission, submission: str, image: str, deadline_s: int) -> dict[str, Any]:
    """The pod's first init container: the servers start once the models Job has fetched the models; the pod fails
    (its shard named missing by the merge) when that Job failed, or did not finish within its deadline."""
    folder = markers(plan, submission)
    done, failed = shell_line([f"{folder}/models.done"]), shell_line([f"{folder}/models.failed"])
    script = "\n".join(
        [
            f"for _ in $(seq {deadline_s // 10}); do",
            f"  [ -f {done} ] && exit 0",
            f'  if [ -f {failed} ]; then echo "the models Job failed: $(cat {failed})"; exit 1; fi',
            "  sleep 10",
            "done",
            f'echo "the models were not fetched within {deadline_s} s: see the models Job"; exit 1',
        ]
    )
    # the whole volume, read only: a subPath mount made before the models Job made its folder would be root's
    return bench_container(
        "wait-for-models", image, script, {"name": "results", "mountPath": VOLUME_ROOT, "readOnly": True}
    )


def shard_command(plan: Submission, submission: str) -> str:
    """The shell of pod JOB_COMPLETION_INDEX: shard index+1 of N, its exit status left as a marker of this
    submission. The shell is the container's PID 1, which a SIGTERM would not stop: it hands the kubelet's SIGTERM to
    the bench, which writes the row of a run that has just ended within terminationGracePeriodSeconds."""
    folder, shard = markers(plan, submission), '"$((JOB_COMPLETION_INDEX + 1))"'
    marker = shell_line([f"{folder}/shard"]) + f"{shard}.status"
    return "\n".join(
        [
            "set -u",
            f"mkdir -p {shell_line([folder])}",
            'bench=""',
            """trap '[ -n "$bench" ] && kill -TERM "$bench" 2>/dev/null' TERM""",
            f"{shell_line(plan.run_argv(shard))} &",
            "bench=$!",
            'status=0; wait "$bench" || status=$?',
            # a TERM ends `wait` early: wait again while the bench still runs
            'while kill -0 "$bench" 2>/dev/null; do status=0; wait "$bench" || status=$?; done',
            f'echo "$status" > {marker}',
            'exit "$status"',
        ]
    )
