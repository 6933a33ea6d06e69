# The bench itself, for a Kubernetes pod, which has no Docker engine (`bench submit k8s`, docs/running.md): this
# checkout in /opt/agent-bench with the bench's Python dependencies, python3, git and bash. `make bench-image`
# (bench/submit/image.py) builds it from a context of checkout/ (the tracked files) and wheels/ (the dependencies).
# BASE is any Debian-like image with python3 3.11 (the wheels' ABI); registry-less CI passes a local one.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

COPY wheels /tmp/wheels
# The wheels are unpacked rather than installed: the local base image has no pip, and a wheel is a zip of what
# goes into site-packages. Into the interpreter's own: grading runs `python3 -I`, which reads no PYTHONPATH. The
# pod's scripts call `python`, which Debian's python3 does not provide.
RUN set -eu; \
    if ! command -v git >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*; \
    fi; \
    command -v python >/dev/null 2>&1 || ln -s "$(command -v python3)" /usr/local/bin/python; \
    site="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"; \
    mkdir -p "$site"; \
    for wheel in /tmp/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$site"; done; \
    rm -rf /tmp/wheels

COPY checkout /opt/agent-bench
ENV PYTHONPATH=/opt/agent-bench PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /opt/agent-bench
