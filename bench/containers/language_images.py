"""A language's sandbox image: the sandbox image with the language's toolchain from Debian's packages
(docker/language.Dockerfile), built when first needed and tagged by its inputs, as the sandbox image is."""

from __future__ import annotations

import time
from typing import Any

from bench import ROOT
from bench.containers.engine import SANDBOX_UID
from bench.containers.images import build_image, digest, ensure_sandbox_image, image_exists
from bench.languages.base import Language

LANGUAGE_DOCKERFILE = ROOT / "docker" / "language.Dockerfile"


def language_tag(sandbox: str, lang: Language) -> str:
    parts = [sandbox.encode(), " ".join(lang.packages).encode(), LANGUAGE_DOCKERFILE.read_bytes()]
    return f"agentbench/sandbox-{lang.name}:{digest(parts)}"


def ensure_language_image(client: Any, lang: Language) -> str:
    """The image the agent works in and the grader grades in for `lang`; the plain sandbox image when the language
    needs no packages (Python). Builds it when missing: the seconds it took are printed once."""
    sandbox = ensure_sandbox_image(client)
    if not lang.packages:
        return sandbox
    tag = language_tag(sandbox, lang)
    if not image_exists(client, tag):
        started = time.monotonic()
        build_image(
            client=client,
            context=ROOT / "docker",
            dockerfile=LANGUAGE_DOCKERFILE,
            tag=tag,
            base=sandbox,
            PACKAGES=" ".join(lang.packages),
            UID=str(SANDBOX_UID),
        )
        print(
            f"built {tag} ({lang.name}: {', '.join(lang.packages)}) in {time.monotonic() - started:.0f} s", flush=True
        )
    return tag
