"""The bench's own image, for pods without a Docker engine (`bench submit k8s --image`): `make bench-image`,
which also builds Jeff's CPU llama-server image (bench/llama/cpu_image.py) for the pods' `--jeff-image`.

docker/bench.Dockerfile on the usual base (bench.containers.images), with a build context of this checkout's tracked
files and the wheels of the bench's dependencies (pyproject.toml's, at the versions `make setup` installed here from
requirements.lock), which pip on this machine fetches the way it fetches anything, from its own configuration.
Tagged by a hash of all of it, so it is built once per change of the code or the pins. The cluster pulls it from a
registry of yours: tag and push what this prints.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.containers.engine import docker_client
from bench.containers.images import DEFAULT_SANDBOX_BASE, base_image, build_image, digest, image_exists
from bench.errors import PrerequisiteError
from bench.llama.cpu_image import ensure_llama_cpu_image

DOCKERFILE = Path("docker/bench.Dockerfile")  # in the checkout
REPO = "agentbench/bench"
PACKAGE = "local-agent-bench"


def tracked_files(checkout: Path) -> list[str]:
    """The checkout's files as git knows them (nothing ignored, built or cached goes into the image)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(checkout), "ls-files", "-z", "--cached"], capture_output=True, check=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise PrerequisiteError(f"the bench image is made from a git checkout of this repository ({e})") from e
    return sorted(name for name in listed.decode().split("\0") if name and (checkout / name).is_file())


def dependency_pins() -> list[str]:
    """pyproject.toml's dependencies, without the extras, pinned to the versions installed here (`make setup`, from
    requirements.lock): pyproject.toml gives their ranges only."""
    try:
        declared = metadata.requires(PACKAGE) or []
        names = [re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0] for spec in declared if "extra ==" not in spec]
        return [f"{name}=={metadata.version(name)}" for name in names]
    except metadata.PackageNotFoundError as e:
        raise PrerequisiteError(f"{e.name or PACKAGE} is not installed here: run `make setup` first") from e


def bench_tag(checkout: Path, base: str, files: list[str], pins: list[str]) -> str:
    parts = [base.encode(), *(pin.encode() for pin in pins), (checkout / DOCKERFILE).read_bytes()]
    parts += [name.encode() + (checkout / name).read_bytes() for name in files]
    return f"{REPO}:{digest(parts)}"


def fetch_wheels(pins: list[str], folder: Path) -> None:
    """Wheels of the pins and of what they need, by this machine's pip (its index and mirrors)."""
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(folder), *pins]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise PrerequisiteError(f"pip could not fetch the bench's dependencies as wheels: {tail}")


def bench_image(checkout: Path) -> str:
    """The tag the bench image of `checkout` has (or will have, once built)."""
    return bench_tag(checkout, base_image(DEFAULT_SANDBOX_BASE), tracked_files(checkout), dependency_pins())


def ensure_bench_image(client: Any, checkout: Path) -> str:
    """The bench image of `checkout` (this repository), built if missing; returns its tag."""
    base = base_image(DEFAULT_SANDBOX_BASE)
    files, pins = tracked_files(checkout), dependency_pins()
    tag = bench_tag(checkout, base, files, pins)
    if image_exists(client, tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="agentbench-image-") as tmp:
        context = Path(tmp)
        fetch_wheels(pins, context / "wheels")
        for name in files:
            target = context / "checkout" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(checkout / name, target)
        shutil.copy(checkout / DOCKERFILE, context / "Dockerfile")
        build_image(client=client, context=context, dockerfile=context / "Dockerfile", tag=tag, base=base)
    return tag


def main() -> int:
    """The images of `bench submit k8s`'s pods this machine builds: the bench's and Jeff's CPU llama-server."""
    from bench import ROOT  # `make bench-image` runs this: the checkout is the one this module is in

    try:
        client = docker_client()
        tag, jeff = ensure_bench_image(client, ROOT), ensure_llama_cpu_image(client, ROOT)
    except PrerequisiteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(tag)
    print(jeff)
    print(
        "push them where the cluster pulls from under these names (docker tag, docker push), or under others "
        "passed to `bench submit k8s --image`/`--jeff-image`; Flint's is llama_image (make gpu-image)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
