"""A language's sandbox image: the sandbox image with the language's toolchain from Debian's packages, built when
first needed and tagged by its inputs (the sandbox image's tag, the packages, the Dockerfile), as the sandbox image is.
The Dockerfile is this module's own text, built in a context of its own: it needs no file of the checkout."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench.containers.engine import SANDBOX_UID
from bench.containers.images import build_image, digest, image_exists
from bench.languages.base import Language

# The sandbox image (python3 for the agent, git, pytest) plus the toolchain, so the agent can run the language's tests
# and the grader can grade them; no setuid or setgid programs, as in the sandbox image.
DOCKERFILE = """\
ARG BASE
FROM ${BASE}
ARG PACKAGES
ARG UID=10001
USER root
RUN set -eu; \\
    apt-get update; \\
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${PACKAGES}; \\
    rm -rf /var/lib/apt/lists/*; \\
    find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
USER ${UID}
"""


def language_tag(sandbox: str, lang: Language) -> str:
    parts = [sandbox.encode(), " ".join(lang.packages).encode(), DOCKERFILE.encode()]
    return f"agentbench/sandbox-{lang.name}:{digest(parts)}"


def ensure_language_image(client: Any, lang: Language, sandbox: str) -> str:
    """The image the agent works in and the grader grades in for `lang`, on the sandbox image `sandbox`; that image
    itself when the language needs no packages (Python). Built when missing; the seconds it took are printed."""
    if not lang.packages:
        return sandbox
    tag = language_tag(sandbox, lang)
    if not image_exists(client, tag):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="bench-language-image-") as context:
            dockerfile = Path(context) / "Dockerfile"
            dockerfile.write_text(DOCKERFILE)
            build_image(
                client=client,
                context=Path(context),
                dockerfile=dockerfile,
                tag=tag,
                base=sandbox,
                PACKAGES=" ".join(lang.packages),
                UID=str(SANDBOX_UID),
            )
        print(
            f"built {tag} ({lang.name}: {', '.join(lang.packages)}) in {time.monotonic() - started:.0f} s", flush=True
        )
    return tag
