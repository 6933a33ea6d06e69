"""A CUDA llama-server for the GPU rehearsal, built on the GPU machine itself: from the llama.cpp source the rehearsal
carries (bench.llama.source_tree, a .tar.xz of a few MB), for the card's own architecture only, with the CUDA
compiler found there (the nvcc on PATH, else $CUDA_PATH, else /usr/local/cuda) and cuBLAS from that toolkit or from
PyPI's wheels in this Python's site packages (PyTorch brings them). A build of every CUDA kernel for one
architecture is about 50 CPU-minutes (measured on a build machine of this project: docs/gpu.md), a few minutes on a
16-core node; it is bounded by the step's deadline, and each phase is a figure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.llama.cuda_compat import COMPRESSION_FLAG
from bench.llama.nvcc import library_dir, nvcc_top
from bench.llama.source_tree import extract
from bench.rehearsal.steps import Emit, Figure

STEP = "llama build"
CONFIGURE = [
    "-DGGML_CUDA=ON",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DGGML_CCACHE=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined",
    COMPRESSION_FLAG,  # as the bench's own builds (bench/llama/cuda_compat.py)
]
JOB_GIB = 1.5  # the largest compiler process of an sm_90 unit took 1.2 GiB (docs/gpu.md)


@dataclass
class Toolkit:
    """A CUDA compiler and where CMake finds what else the build links (cuBLAS, the driver) when it is elsewhere."""

    nvcc: Path
    root: Path
    flags: list[str] = field(default_factory=list)
    library_dirs: list[Path] = field(default_factory=list)  # for the server's loader path
    detail: str = ""


def site_library(name: str) -> Path | None:
    """A library PyPI's CUDA wheels put in this Python's site packages (nvidia/cu13/lib, nvidia/cublas/lib, ...)."""
    for root in (Path(p) for p in sys.path if p):
        for found in sorted(root.glob(f"nvidia/*/lib/{name}*")):
            return found
    return None


def driver_library() -> Path | None:
    """The driver's libcuda.so.1, for CMake's CUDA::cuda_driver where the toolkit has no link stub."""
    folders = [
        *os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep),
        "/usr/local/nvidia/lib64",
        "/usr/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
    ]
    return next((Path(f) / "libcuda.so.1" for f in folders if f and (Path(f) / "libcuda.so.1").exists()), None)


def find_toolkit(work: Path) -> Toolkit | str:
    """The machine's CUDA compiler and cuBLAS, or why there is none."""
    home = Path(os.environ.get("CUDA_PATH") or "/usr/local/cuda")
    nvcc = shutil.which("nvcc") or (str(home / "bin" / "nvcc") if (home / "bin" / "nvcc").exists() else "")
    root = nvcc_top(nvcc) if nvcc else None
    if root is None:
        return "no CUDA compiler here (nvcc on PATH, $CUDA_PATH or /usr/local/cuda)"
    toolkit = Toolkit(Path(nvcc), root, detail=f"nvcc {nvcc} (toolkit {root})")
    if library_dir(root, "libcublas.so") is None:
        cublas, cublas_lt = site_library("libcublas.so"), site_library("libcublasLt.so")
        header = next(
            (p for p in (Path(s) for s in sys.path if s) for p in p.glob("nvidia/*/include/cublas_v2.h")), None
        )
        if cublas is None or cublas_lt is None or header is None:
            return f"{toolkit.detail} has no cuBLAS, and no PyPI cuBLAS wheel is installed in {sys.prefix}"
        include = work / "cublas-include"  # cuBLAS's headers alone, not the rest of that wheel tree's CUDA headers
        include.mkdir(parents=True, exist_ok=True)
        for name in header.parent.glob("cublas*.h"):
            if not (include / name.name).exists():
                (include / name.name).symlink_to(name)
        toolkit.flags += [
            f"-DCUDA_cublas_LIBRARY={cublas}",
            f"-DCUDA_cublasLt_LIBRARY={cublas_lt}",
            f"-DCMAKE_CUDA_FLAGS=-I{include}",
            f"-DCMAKE_CXX_FLAGS=-I{include}",
        ]
        toolkit.library_dirs.append(cublas.parent)
        toolkit.detail += f", cuBLAS from {cublas.parent}"
    if not any((root / sub / "stubs" / "libcuda.so").exists() for sub in ("lib64", "lib", "targets/x86_64-linux/lib")):
        driver = driver_library()
        if driver is None:
            return f"{toolkit.detail}: no driver library to link against (libcuda.so.1)"
        toolkit.flags.append(f"-DCUDA_cuda_driver_LIBRARY={driver}")
    return toolkit


def configure_command(source: Path, build: Path, toolkit: Toolkit, architectures: str) -> list[str]:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    return [
        "cmake",
        "-S",
        str(source),
        "-B",
        str(build),
        *generator,
        f"-DCMAKE_CUDA_COMPILER={toolkit.nvcc}",
        f"-DCUDAToolkit_ROOT={toolkit.root}",
        f"-DCMAKE_CUDA_ARCHITECTURES={architectures}",
        *CONFIGURE,
        *toolkit.flags,
    ]


def jobs() -> int:
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError):
        available = JOB_GIB
    return max(1, min(os.cpu_count() or 1, int(available / JOB_GIB)))


def bounded(command: list[str], log: Path, deadline: float, cwd: Path | None = None) -> tuple[int | None, float]:
    """(exit status or None when past the deadline, seconds): the command in a session of its own, its output in
    `log`; killed with everything it started when the deadline comes."""
    started = time.monotonic()
    with open(log, "ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        try:
            return proc.wait(max(1.0, deadline - time.monotonic())), time.monotonic() - started
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return None, time.monotonic() - started


def tail(log: Path, lines: int = 3) -> str:
    return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])[-400:]


def build_server(archive: Path, work: Path, architectures: str, deadline: float, emit: Emit) -> Path | None:
    """llama-server built from `archive` into `work` (its build/bin), or None with the reason emitted."""
    work.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as source:
        extract(source, work)
    toolkit = find_toolkit(work)
    if isinstance(toolkit, str):
        emit(Figure(step=STEP, name="CUDA toolkit", value=None, status="FAIL", detail=toolkit))
        return None
    emit(Figure(step=STEP, name="CUDA toolkit", value=str(toolkit.root), status="ok", detail=toolkit.detail))
    log, build = work / "build.log", work / "build"
    status, seconds = bounded(configure_command(work / "llama.cpp", build, toolkit, architectures), log, deadline)
    emit(
        Figure(
            step=STEP,
            name="configure seconds",
            value=round(seconds, 1),
            status="ok" if status == 0 else "FAIL",
            detail=tail(log, 1),
        )
    )
    if status != 0:
        return None
    command = ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs())]
    status, seconds = bounded(command, log, deadline)
    server = build / "bin" / "llama-server"
    done = status == 0 and server.exists()
    why = tail(log) if status is not None else f"past the step's deadline (killed): {tail(log, 1)}"
    emit(
        Figure(
            step=STEP,
            name=f"build seconds ({jobs()} jobs, sm {architectures})",
            value=round(seconds, 1),
            status="ok" if done else "FAIL",
            detail="" if done else why,
        )
    )
    return server if done else None
