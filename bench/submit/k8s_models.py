"""The models Job's container of `bench submit k8s`: each hub model fetched once into the volume's model cache,
before any shard's servers start (they run offline on it), each fetch tried again in the pod."""

from __future__ import annotations

import shlex
from typing import Any

from bench.config import BenchConfig
from bench.submit.k8s_pods import PULL_POLICY, RESOURCES, VOLUME_ROOT, secured
from bench.submit.plan import shell_line

FETCH_ATTEMPTS, FETCH_WAIT_S = 3, 60  # a model's fetch is tried again in the pod: a hub's or a link's passing fault


def models_container(settings: BenchConfig, image: str, folder: str) -> dict[str, Any]:
    """The models Job's container: llama-server of `image` (Jeff's CPU one) fetches each hub model and is stopped
    once it answers; `folder`'s marker says how it went. The retry is the pod's own (FETCH_ATTEMPTS for each
    model), so `models.failed`, on which every shard gives up, is written only once the last attempt failed; a
    disruption's SIGTERM ends the script without a marker."""
    refs = [
        hub
        for model, hub in ((settings.flint_model, settings.flint_hf), (settings.jeff_model, settings.jeff_hf))
        if not model
    ][: 2 if settings.use_jeff else 1]
    cache = f"{VOLUME_ROOT}/model-cache"
    failed = shell_line([f"{folder}/models.failed"])
    script = [
        "set -u",
        "trap 'exit 143' TERM",  # a disruption: no marker, the Job runs the pod again
        f"mkdir -p {shell_line([folder, cache])}",
        f'fail() {{ echo "$1" | tee {failed}; exit 1; }}',
        "fetch_once() {  # into LLAMA_CACHE, the volume's model cache; loaded on the CPU, no warm-up, then stopped",
        '  /opt/llama/llama-server -hf "$1" -c 256 -ngl 0 --no-warmup --host 127.0.0.1 --port 8090 & pid=$!',
        "  until curl -fsS -o /dev/null http://127.0.0.1:8090/health; do",
        '    kill -0 "$pid" 2>/dev/null || return 1',
        "    sleep 1",  # a curl a second at 127.0.0.1 is cheap, and each model is marked done at once
        "  done",
        '  kill "$pid"; wait "$pid" 2>/dev/null || true',
        "}",
        "fetch() {",
        f"  for attempt in $(seq {FETCH_ATTEMPTS}); do",
        '    fetch_once "$1" && return 0',
        f'    echo "llama-server could not fetch $1 (attempt $attempt of {FETCH_ATTEMPTS})"',
        f'    [ "$attempt" -lt {FETCH_ATTEMPTS} ] && sleep {FETCH_WAIT_S}',
        "  done",
        f'  fail "llama-server could not fetch $1 in {FETCH_ATTEMPTS} attempts: see the log of the models Job"',
        "}",
        *[f"fetch {shlex.quote(ref)}" for ref in refs],
        f"touch {shell_line([folder + '/models.done'])}",
    ]
    container = {
        "name": "models",
        "image": image,
        "imagePullPolicy": PULL_POLICY,
        "command": ["sh", "-c", "\n".join(script)],
        "env": [{"name": "LLAMA_CACHE", "value": cache}],
        "resources": RESOURCES["models"],
        # the whole volume: this pod makes the folders the shards' pods then mount by subPath (a subPath the
        # kubelet makes would be root's, which their user cannot write)
        "volumeMounts": [{"name": "results", "mountPath": VOLUME_ROOT}],
    }
    return secured(container)
