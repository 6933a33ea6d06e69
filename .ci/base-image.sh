#!/usr/bin/env bash
# Make a local Debian base image for the Dockerfiles where no container registry is reachable:
# debootstrap a minimal bookworm with python3 and pytest, keep it as a tarball in the cache, `docker import` it.
# Usage: .ci/base-image.sh IMAGE_NAME
set -euo pipefail
image=${1:?usage: .ci/base-image.sh IMAGE_NAME}
cache=${AGENTBENCH_CACHE:-$HOME/.cache/agent-bench}
tarball=$cache/base-bookworm.tar.gz
mkdir -p "$cache"

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image: present"
  exit 0
fi
if [ ! -s "$tarball" ]; then
  rootfs=$(mktemp -d /tmp/agentbench-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  echo "base image $image: debootstrap (several minutes, once per machine)"
  debootstrap --variant=minbase --include=python3,python3-pytest bookworm "$rootfs" http://deb.debian.org/debian \
    >"$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log"; exit 1; }
  tar -C "$rootfs" -c . | gzip -1 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
fi
zcat "$tarball" | docker import - "$image" >/dev/null
echo "base image $image: imported from $tarball"
