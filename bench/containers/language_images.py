"""A language's sandbox image: the sandbox image with the language's toolchain from Debian's packages, built when
first needed and tagged by its inputs (the image it is installed on, the packages, the Dockerfile), as the sandbox
image is. A language that needs more (a test runner from npm, a wrapper script, a runner's main built once) gets a
second layer on top, tagged by those inputs too. The toolchain goes on the sandbox image's system stage (all of it but
the agent's code: bench/containers/images.py), and the agent's code is copied from the sandbox image on top, last: a
change to agent/ costs a copy, not the toolchain's install again (C++'s took 257 s in CI). The Dockerfiles are this
module's own text, built in contexts of their own: they need no file of the checkout; npm packages are installed on
this machine, through its npm configuration, and copied in, so the image reaches no registry but Debian's."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.agents.install import INSTALL_TIMEOUT_S, npm_install
from bench.containers.engine import SANDBOX_UID
from bench.containers.images import build_image, digest, image_exists, on_system_stage
from bench.errors import PrerequisiteError
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
# The language's own files (context/files/ is the image's /: npm packages under /opt/bench-npm, scripts, configs),
# then its set-up command as root.
EXTRAS_DOCKERFILE = """\
ARG BASE
FROM ${BASE}
ARG SETUP=true
ARG UID=10001
USER root
COPY files/ /
RUN set -eu; sh -c "$SETUP"; find / -xdev -type f -perm /6000 -exec chmod ug-s {} +
USER ${UID}
"""
NPM_HOME = "opt/bench-npm"  # where the language's npm packages go, in the image


def language_tag(sandbox: str, lang: Language) -> str:
    parts = [sandbox.encode(), " ".join(lang.packages).encode(), DOCKERFILE.encode()]
    return f"agentbench/sandbox-{lang.name}:{digest(parts)}"


def extras_tag(toolchain: str, lang: Language) -> str:
    files = [f"{path}\n{text}".encode() for path, text in sorted(lang.image_files.items())]
    parts = [toolchain.encode(), " ".join(lang.npm).encode(), lang.image_setup.encode(), EXTRAS_DOCKERFILE.encode()]
    return f"agentbench/sandbox-{lang.name}-run:{digest(parts + files)}"


def ensure_language_image(client: Any, lang: Language, sandbox: str) -> str:
    """The image the agent works in and the grader grades in for `lang`, on the sandbox image `sandbox`; that image
    itself when the language needs no packages (Python). Built when missing; the seconds it took are printed. An
    image that does not name its system stage (one made from the sandbox image, as a test's) gets the toolchain on
    itself."""
    if not lang.packages:
        return sandbox
    return on_system_stage(client, sandbox, lambda base: _ensure_runner(client, lang, base))


def _ensure_runner(client: Any, lang: Language, base: str) -> str:
    """The toolchain image on `base`, and the runner layer on it where the language needs one."""
    toolchain = _ensure_toolchain(client, lang, base)
    if not (lang.npm or lang.image_files or lang.image_setup):
        return toolchain
    tag = extras_tag(toolchain, lang)
    if not image_exists(client, tag):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="bench-language-extras-") as context:
            write_extras(lang, Path(context))
            build_image(
                client=client,
                context=Path(context),
                dockerfile=Path(context) / "Dockerfile",
                tag=tag,
                base=toolchain,
                SETUP=lang.image_setup or "true",
                UID=str(SANDBOX_UID),
            )
        print(f"built {tag} ({lang.name}'s runner) in {time.monotonic() - started:.0f} s", flush=True)
    return tag


def write_extras(lang: Language, context: Path) -> None:
    """The build context of the extras layer: its Dockerfile, and files/ laid out as the image's /."""
    (context / "Dockerfile").write_text(EXTRAS_DOCKERFILE)
    files = context / "files"
    files.mkdir()
    for path, text in lang.image_files.items():
        dest = files / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        dest.chmod(0o755 if "/bin/" in path else 0o644)
    if lang.npm:
        folder = files / NPM_HOME
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(npm_install(folder, lang.npm), capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-400:]
            raise PrerequisiteError(f"installing {lang.name}'s test runner ({' '.join(lang.npm)}) failed: {tail}")
    for at, dirs, names in os.walk(files):  # readable by the agent's user, whatever this machine's umask
        for name in [*dirs, *names]:
            entry = Path(at) / name
            if not entry.is_symlink():
                entry.chmod(entry.stat().st_mode | (0o555 if entry.is_dir() else 0o444))


def _ensure_toolchain(client: Any, lang: Language, sandbox: str) -> str:
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
