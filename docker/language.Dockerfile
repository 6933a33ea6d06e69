# A language's sandbox: the sandbox image (python3 for the agent, git, pytest) with that language's toolchain from
# Debian's packages (bench/languages/), so the agent can run the language's tests and the grader can grade them.
# Built by bench/containers/language_images.py, tagged by the sandbox image's tag and the package list.
ARG BASE
FROM ${BASE}
ARG PACKAGES
ARG UID=10001
USER root
RUN set -eu; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${PACKAGES}; \
    rm -rf /var/lib/apt/lists/*; \
    # No setuid or setgid programs, as in the sandbox image.
    find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
USER ${UID}
