#!/usr/bin/env bash
# Make a local Debian base image for the Dockerfiles where no container registry is reachable:
# debootstrap a minimal bookworm with python3 and pytest, keep it as a tarball in the cache, `docker import` it.
# The Debian mirror is the one this machine's own apt sources name ($DEBIAN_MIRROR overrides); none is written here.
# Usage: .ci/base-image.sh IMAGE_NAME      .ci/base-image.sh --mirror   (print the mirror it would use)
#        .ci/base-image.sh --suite trixie --include python3,make IMAGE_NAME   (another suite, other packages)
#        .ci/base-image.sh --prerequisites IMAGE_NAME   (before any long build: can IMAGE_NAME be made here?)
# The tarball is named after the image (agentbench/base:bookworm: base-bookworm.tar.gz): a new package list wants
# a new image name, or the tarball removed.
set -euo pipefail
suite=bookworm
include=python3,python3-pytest
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=${2:?--suite needs a Debian suite}; shift 2 ;;
    --include) include=${2:?--include needs packages, comma-separated}; shift 2 ;;
    *) break ;;
  esac
done
apt_etc=${APT_ETC:-/etc/apt}

# The first deb source for $suite: one-line entries (sources.list, *.list) first, then deb822 stanzas (*.sources).
# Failing that, any deb source whose URI ends in /debian (a Debian archive serves every suite).
debian_mirror() {
  local lists=() stanzas=() f
  for f in "$apt_etc/sources.list" "$apt_etc"/sources.list.d/*.list; do [ -r "$f" ] && lists+=("$f"); done
  for f in "$apt_etc"/sources.list.d/*.sources; do [ -r "$f" ] && stanzas+=("$f"); done
  {
    [ ${#lists[@]} -eq 0 ] || awk '
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }  # [options] may hold spaces
        print $(i + 1), $i
      }' "${lists[@]}"
    [ ${#stanzas[@]} -eq 0 ] || awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        types = uris = suites = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^[ \t]*#/ || index($i, ":") == 0) continue
          key = tolower(substr($i, 1, index($i, ":") - 1)); value = substr($i, index($i, ":") + 1)
          sub(/^[ \t]+/, "", value)
          if (key == "types") types = value
          else if (key == "uris") uris = value
          else if (key == "suites") suites = value
          else if (key == "enabled") enabled = value
        }
        if (enabled ~ /no/ || (" " types " ") !~ /[ \t]deb[ \t]/) next
        n = split(suites, s, /[ \t]+/); split(uris, u, /[ \t]+/)
        for (j = 1; j <= n; j++) print s[j], u[1]
      }' "${stanzas[@]}"
  } | awk -v suite="$suite" '
      $1 == suite && !found { found = $2 }
      $2 ~ /\/debian\/?$/ && !fallback { fallback = $2 }
      END { if (found) print found; else if (fallback) print fallback }'
}

# What making the image needs, before `make` starts a long build: debootstrap, run as root. Installed where this
# machine can (root with apt-get); otherwise one line naming the package and the ways around it. `id -u`, not $EUID:
# tests/portability/test_base_prerequisites.py stands a non-root user in with an `id` of its own on PATH.
prerequisites() {
  local image=${1:?usage: .ci/base-image.sh --prerequisites IMAGE_NAME}
  local instead="or set AGENTBENCH_BASE_IMAGE to an image you have (Debian with python3 and pytest), or SANDBOX=local"
  command -v debootstrap >/dev/null && [ "$(id -u)" = 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "base image: making $image needs debootstrap, run as root: sudo apt-get install debootstrap, then" \
      "sudo .ci/base-image.sh $image (once; make uses it after), $instead" >&2
    return 1
  fi
  if ! command -v apt-get >/dev/null; then
    echo "base image: making $image needs debootstrap, and there is no apt-get here: install debootstrap, $instead" >&2
    return 1
  fi
  echo "base image: installing debootstrap (apt-get), which making $image needs" >&2
  if apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null \
    && command -v debootstrap >/dev/null; then
    return 0
  fi
  echo "base image: apt-get install debootstrap failed (above), which making $image needs: install it, $instead" >&2
  return 1
}

if [ "${1:-}" = "--prerequisites" ]; then
  prerequisites "${2:-}" || exit 1
fi

mirror=${DEBIAN_MIRROR:-$(debian_mirror)}
if [ -z "$mirror" ]; then
  echo "base image: no Debian mirror in $apt_etc/sources.list(.d): add one there or set DEBIAN_MIRROR=URL" >&2
  exit 1
fi
if [ "${1:-}" = "--mirror" ] || [ "${1:-}" = "--prerequisites" ]; then
  [ "$1" = "--mirror" ] && echo "$mirror"
  exit 0
fi

image=${1:?usage: .ci/base-image.sh IMAGE_NAME}
cache=${AGENTBENCH_CACHE:-$HOME/.cache/agent-bench}
name=${image##*/}
tarball=$cache/${name//:/-}.tar.gz
mkdir -p "$cache"

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "base image $image: present"
  exit 0
fi
if [ ! -s "$tarball" ]; then
  rootfs=$(mktemp -d /tmp/agentbench-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  echo "base image $image: debootstrap $suite from $mirror (several minutes, once per machine)"
  debootstrap --variant=minbase --include="$include" "$suite" "$rootfs" "$mirror" \
    >"$cache/debootstrap-$suite.log" 2>&1 || { tail -20 "$cache/debootstrap-$suite.log"; exit 1; }
  tar -C "$rootfs" -c . | gzip -1 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
fi
zcat "$tarball" | docker import - "$image" >/dev/null
echo "base image $image: imported from $tarball"
