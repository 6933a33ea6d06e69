# The sandbox the agent runs in: python3, pytest, git, and the agent package. Nothing else is needed, and the
# container reaches nothing but Flint and Jeff (it sits on an internal network).
# BASE is any Debian-like image with python3; users keep the public default, registry-less CI passes a local one.
ARG BASE=python:3.11-slim-bookworm
# The system stage holds everything but the agent's code, so a language's toolchain is installed on it once
# (bench/containers/language_images.py) and not again each time agent/ changes.
FROM ${BASE} AS system
# The unprivileged user the agent runs as; the bench passes its SANDBOX_UID (bench/containers/engine.py).
ARG UID=10001

# pytest for the done check and the grading; git because `git status/diff` are among the agent's safe commands.
RUN set -eu; \
    if ! command -v git >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*; \
    fi; \
    python3 -c "import pytest" 2>/dev/null || python3 -m pip install --no-cache-dir "pytest>=7,<10"; \
    useradd --create-home --uid "$UID" agent; \
    # No setuid or setgid programs: containers run with no-new-privileges anyway, this is the second line.
    find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
ENV PYTHONPATH=/opt/agentbench PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER ${UID}
WORKDIR /repo

FROM system
COPY agent /opt/agentbench/agent
COPY docker/forward.py docker/chat_body.py docker/record_proxy.py /opt/agentbench/
