#!/usr/bin/env bash
# CI's first job: the fast tier as a newcomer meets it (docs/development.md). A clean clone of HEAD, a venv made from
# `.[dev]` alone (pip's cache may serve it; no llama.cpp package), an empty home, and `make test-fast` with no network:
# a network namespace of its own with only loopback up (`unshare --net`, as root), so the package index is unreachable
# and a test that needs it fails. Prints the tier's wall time (the figures measured here: docs/development.md).
# Usage: .ci/fast-tier.sh
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
log() { echo "[fast tier $(($(date +%s) - started))s] $*"; }

work=$(mktemp -d /tmp/agentbench-fast-tier.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone --quiet . "$work/clone"
mkdir "$work/home"
if ! { "${PYTHON:-python3}" -m venv "$work/clone/.venv" \
  && "$work/clone/.venv/bin/pip" install --quiet -e "$work/clone[dev]"; } >"$work/pip.log" 2>&1; then
  tail -40 "$work/pip.log"
  log "FAILED: the venv from .[dev]"
  exit 1
fi
log "clone of $(git -C "$work/clone" rev-parse --short HEAD) and its venv from .[dev]: done"

# Nothing from this machine's set-up leaks in: no llama-server named by LLAMA_SERVER, no caches or configs elsewhere.
tier_started=$(date +%s)
unshare --net sh -c 'ip link set lo up && exec "$@"' sh \
  env -u LLAMA_SERVER -u XDG_CACHE_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u MPLCONFIGDIR HOME="$work/home" \
  make -C "$work/clone" test-fast
log "make test-fast passed offline in $(($(date +%s) - tier_started)) s"
