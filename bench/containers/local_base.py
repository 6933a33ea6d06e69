"""Which base image the Dockerfiles build on, for `make test` and `make bench`: their public defaults where the engine
has them or can pull them, else a local Debian image made once from this machine's own apt mirror (.ci/base-image.sh:
debootstrap, kept as a tarball in the cache, `docker import`ed), as CI does. AGENTBENCH_BASE_IMAGE, when set, wins.

    python -m bench.containers.local_base      prints the image to build on ("" for the Dockerfiles' defaults)
    python -m bench.containers.local_base --prerequisites   before any long build: could the local image be made here?

Progress and reasons go to stderr; stdout holds only the answer, for the Makefile's AGENTBENCH_BASE_IMAGE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.containers.engine import docker_or_none
from bench.containers.images import DEFAULT_LLAMA_BASE, DEFAULT_SANDBOX_BASE, image_exists

LOCAL_IMAGE = "agentbench/base:bookworm"  # the name .ci/run gives it too
DEFAULT_BASES = (DEFAULT_SANDBOX_BASE, DEFAULT_LLAMA_BASE)
MAKE_SCRIPT = Path(".ci/base-image.sh")  # in the checkout


@dataclass(frozen=True)
class Choice:
    image: str  # "" : the Dockerfiles' own defaults
    make: bool  # the local image must be made first
    why: str


def choose(setting: str, engine: bool, present: Callable[[str], bool], pull: Callable[[str], str | None]) -> Choice:
    """The decision. `present(image)`: the engine has it; `pull(image)`: None once pulled, else why it could not be.
    The local image, once made, is used without trying to pull again (made once, then cached)."""
    if setting:
        return Choice(setting, False, "AGENTBENCH_BASE_IMAGE is set")
    if not engine:
        return Choice("", False, "no Docker engine answers: nothing is built (the Docker tests say so)")
    missing = [image for image in DEFAULT_BASES if not present(image)]
    if not missing:
        return Choice("", False, f"the engine has {', '.join(DEFAULT_BASES)}")
    if present(LOCAL_IMAGE):
        return Choice(LOCAL_IMAGE, False, f"{LOCAL_IMAGE} was made here before ({', '.join(missing)} missing)")
    for image in missing:
        failure = pull(image)
        if failure is not None:
            return Choice(LOCAL_IMAGE, True, f"{image} cannot be pulled here ({failure})")
    return Choice("", False, f"pulled {', '.join(missing)}")


def _pull(client: Any) -> Callable[[str], str | None]:
    def pull(image: str) -> str | None:
        try:
            client.images.pull(image)
        except Exception as e:  # a registry out of reach fails in many ways, each the same answer here
            return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else 'no detail'}"
        return None

    return pull


def main(argv: list[str] | None = None) -> int:
    from bench import ROOT  # `make` runs this: the checkout is the one this module is in

    setting = os.environ.get("AGENTBENCH_BASE_IMAGE", "")
    client = None if setting else docker_or_none()
    present = (lambda image: image_exists(client, image)) if client is not None else (lambda image: False)
    choice = choose(setting, client is not None, present, _pull(client))
    if "--prerequisites" in (sys.argv[1:] if argv is None else argv):  # debootstrap: installed, or one line why not
        checked = ["bash", str(ROOT / MAKE_SCRIPT), "--prerequisites", LOCAL_IMAGE]
        return subprocess.run(checked, stdout=sys.stderr, check=False).returncode if choice.make else 0
    if choice.make:
        print(f"base image: {choice.why}; making {LOCAL_IMAGE} from this machine's apt mirror (once)", file=sys.stderr)
        made = subprocess.run(["bash", str(ROOT / MAKE_SCRIPT), LOCAL_IMAGE], stdout=sys.stderr, check=False)
        if made.returncode != 0:
            print(
                f"base image: making {LOCAL_IMAGE} failed (above); set AGENTBENCH_BASE_IMAGE to a local Debian image "
                "with python3 and pytest, or make the defaults pullable",
                file=sys.stderr,
            )
            return 1
    elif choice.image and not setting:
        print(f"base image: {choice.why}", file=sys.stderr)
    print(choice.image)
    return 0


if __name__ == "__main__":
    sys.exit(main())
