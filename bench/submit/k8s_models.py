"""The models Job's container of `bench submit k8s`: each hub model fetched once into the volume's model cache,
before any shard's servers start (they run offline on it), each fetch checked as the local fetch checks it and tried
again in the pod.

The check is bench/llama/fetched.py's, in the shell of the llama-server image (no Python there): llama.cpp files each
download as `blobs/<oid>`, the oid the hub listed for it (an LFS file's sha256; a git blob id otherwise), and links
`snapshots/<commit>/<path>` to it. Every file of the model's folder must hash to the name of its blob; a bad one is
removed with its link, so the next attempt downloads it anew instead of finding it cached. A file already in the cache
is checked too (a sha256 of the file each submission: about a minute for 12 GB).
"""

from __future__ import annotations

import shlex
from typing import Any

from bench.config import BenchConfig
from bench.llama.hub import parse_hub_ref
from bench.submit.k8s_pods import PULL_POLICY, RESOURCES, VOLUME_ROOT, secured
from bench.submit.plan import shell_line

FETCH_ATTEMPTS, FETCH_WAIT_S = 3, 60  # a model's fetch is tried again in the pod: a hub's or a link's passing fault
# check FOLDER: each file of a model's folder in the cache is the oid the hub listed, its blob's name; a bad one is
# removed. (The `while` runs in a subshell of the pipeline: its `exit 1` is the function's status.)
CHECK = [
    "check() {",
    '  [ -d "$1/snapshots" ] || { echo "$1: the fetch left no file there"; return 1; }',
    '  find "$1/snapshots" -type l -o -type f | while IFS= read -r entry; do',
    '    blob=$(readlink -f "$entry"); oid=${blob##*/}',
    '    if [ ! -L "$entry" ] || ! echo "$oid" | grep -Eq \'^([0-9a-f]{40}|[0-9a-f]{64})$\'; then',
    '      echo "$entry cannot be checked: it links to no blob (use a volume with symbolic links)"',
    "      exit 1",
    "    fi",
    '    size=$(stat -c %s "$blob")',
    '    if [ ${#oid} -eq 64 ]; then found=$(sha256sum < "$blob")',
    '    else found=$({ printf \'blob %s\\000\' "$size"; cat "$blob"; } | sha1sum); fi  # git\'s blob id',
    "    found=${found%% *}",
    '    [ "$found" = "$oid" ] && continue',
    '    echo "the download of ${entry##*/} is corrupted or cut short:"',
    '    echo "  $size bytes with digest $found, the hub listed $oid"',
    '    rm -f "$entry" "$blob"  # not kept: the next attempt fetches it anew',
    "    exit 1",
    "  done",
    "}",
]

# fetch REF FOLDER: llama-server fetches REF, then its files are checked; FETCH_ATTEMPTS tries, then `fail`.
FETCH = [
    "fetch_once() {  # into LLAMA_CACHE, the volume's model cache; loaded on the CPU, no warm-up, then stopped",
    '  /opt/llama/llama-server -hf "$1" -c 256 -ngl 0 --no-warmup --host 127.0.0.1 --port 8090 & pid=$!',
    "  until curl -fsS -o /dev/null http://127.0.0.1:8090/health; do",
    '    kill -0 "$pid" 2>/dev/null || return 1',
    "    sleep 1",  # a curl a second at 127.0.0.1 is cheap, and each model is marked done at once
    "  done",
    '  kill "$pid"; wait "$pid" 2>/dev/null || true',
    "}",
    *CHECK,
    "fetch() {  # $1: the hub reference; $2: its folder in the cache",
    f"  for attempt in $(seq {FETCH_ATTEMPTS}); do",
    '    fetch_once "$1" && check "$2" && return 0',
    f'    echo "llama-server could not fetch $1 (attempt $attempt of {FETCH_ATTEMPTS})"',
    f'    [ "$attempt" -lt {FETCH_ATTEMPTS} ] && sleep {FETCH_WAIT_S}',
    "  done",
    f'  fail "llama-server could not fetch $1 in {FETCH_ATTEMPTS} attempts: see the log of the models Job"',
    "}",
]


def models_container(settings: BenchConfig, image: str, folder: str) -> dict[str, Any]:
    """The models Job's container: llama-server of `image` (Jeff's CPU one) fetches each hub model and is stopped
    once it answers; `folder`'s marker says how it went. The retry is the pod's own (FETCH_ATTEMPTS for each
    model), so `models.failed`, on which every shard gives up, is written only once the last attempt failed; an
    attempt whose files do not hash to what the hub listed has failed (CHECK). A disruption's SIGTERM ends the script
    without a marker."""
    refs = [
        hub
        for model, hub in ((settings.flint_model, settings.flint_hf), (settings.jeff_model, settings.jeff_hf))
        if not model
    ][: 2 if settings.use_jeff else 1]
    cache = f"{VOLUME_ROOT}/model-cache"
    repos = [f"{cache}/{parse_hub_ref(ref, 'flint_hf or jeff_hf').folder}" for ref in refs]
    failed = shell_line([f"{folder}/models.failed"])
    script = [
        "set -u",
        "trap 'exit 143' TERM",  # a disruption: no marker, the Job runs the pod again
        f"mkdir -p {shell_line([folder, cache])}",
        f'fail() {{ echo "$1" | tee {failed}; exit 1; }}',
        *FETCH,
        *[f"fetch {shlex.quote(ref)} {shell_line([repo])}" for ref, repo in zip(refs, repos, strict=True)],
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
