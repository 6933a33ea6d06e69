"""The host matrix, `make setup GPU=cuda` column: the Makefile and .ci/cuda_toolkit.py decide, as on a user's host,
which CUDA builds llama.cpp or why nothing is built, against recorded host facts (recorded.py): driver branch (or
none) x the machine's toolkit (complete CUDA 12.4, 12.9 and 13.0, a partial 13.0, none) x the architectures.

`make -n` remakes its included makefile (.venv/cuda.mk, where the decision is made) for real and then only prints
the build it would run, so a cell that builds shows the exact CMake flags and stops before any compile. NVML is the
shim of the recorded host, and `python -m pip` is a guard that records what it was asked and installs nothing: a
cell that would fetch PyPI's CUDA packages shows that request, and the about 1 GB is never downloaded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from host_matrix.recorded import BRANCHES, Host, driver_line
from host_matrix.toolkits import make_toolkit

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYPI = "nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-cccl==13.0.85 "
PYPI += "nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.1.1.3 nvidia-cuda-nvrtc==13.0.88"
PYPI_FIX = (
    "install a complete CUDA 12 toolkit (nvcc and cuBLAS, e.g. the distribution's cuda-toolkit-12-x) and run "
    "`rm .venv/cuda.mk && make setup GPU=cuda` again, or update the driver to 580 or later (PyPI's CUDA 12 nvcc "
    "packages hold ptxas only)"
)
NATIVE = (
    "make setup GPU=cuda: CUDA_ARCHITECTURES=native builds for this host's GPUs, and there is none to detect: no "
    "NVIDIA driver (NVML Shared Library Not Found); name the GPUs' architectures, e.g. `make setup GPU=cuda "
    'CUDA_ARCHITECTURES=90` (H100/H200; 80: A100, 89: L4/L40S, "80;90" for both)'
)
TOOLKITS = {
    "complete-12.4": ("12.4", True),
    "complete-12.9": ("12.9", True),  # llama.cpp compresses with -compress-mode=size from 12.8 unless told
    "complete-13.0": ("13.0", True),
    "partial-13.0": ("13.0", False),
}
COMPRESSION = "-DGGML_CUDA_COMPRESSION_MODE=speed"  # so a 12.8+ build needs no driver beyond CUDA 12's (R535 runs it)


@dataclass
class Made:
    status: int
    output: str
    pip: list[str]  # what pip was asked, one call a line
    view: Path

    def refusal(self) -> str:
        return next(line for line in self.output.splitlines() if line.startswith("make setup GPU=cuda:"))

    def cmake_args(self) -> str:
        found = re.search(r"CMAKE_ARGS='([^']*)'", self.output)
        assert found, self.output
        return found.group(1)


def run_make(tmp: Path, driver: str | None, toolkit: str, architectures: str | None = None) -> Made:
    """`make -n setup GPU=cuda` on the recorded host, with a venv of its own in `tmp` (the checkout's python)."""
    venv = tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".deps").touch()  # newer than pyproject.toml: make installs no dependencies
    path = ["/usr/bin", "/bin"]  # not /usr/local/bin, where the build machines keep their own nvcc
    if toolkit in TOOLKITS:
        release, complete = TOOLKITS[toolkit]
        path.insert(0, str(make_toolkit(tmp / f"cuda-{release}", release, complete)))
    guard = tmp / "pip-asked.txt"
    env = {
        "PATH": os.pathsep.join(path),
        "HOME": str(tmp),
        "CUDA_PATH": str(tmp / "no-cuda"),
        "PYTHONPATH": os.pathsep.join([str(HERE / "nvml_shim"), str(HERE / "pip_guard")]),
        "AGENTBENCH_HOST": str(Host(driver=driver).write(tmp / "host.json")),
        "PIP_GUARD": str(guard),
    }
    args = ["make", "-n", "-C", str(ROOT), "setup", "GPU=cuda", f"VENV={venv}", f"CACHE={tmp / 'cache'}"]
    args += [f"CUDA_ARCHITECTURES={architectures}"] if architectures else []
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    asked = guard.read_text().splitlines() if guard.exists() else []
    return Made(done.returncode, done.stdout + done.stderr, asked, venv / "cuda")


def driver_text(branch: str) -> str:
    version, cuda = driver_line(branch)
    return (
        f"this driver runs CUDA {cuda[0]}.{cuda[1]} at most: CUDA 13 needs driver 580.65.06 or later (driver {version})"
    )


def machine_flags(tmp: Path, release: str) -> str:
    return f"-DCMAKE_CUDA_COMPILER={tmp}/cuda-{release}/bin/nvcc -DCUDAToolkit_ROOT={tmp}/cuda-{release} {COMPRESSION}"


def expected(branch: str | None, toolkit: str, architectures: str | None, tmp: Path) -> tuple[str, str]:
    """The cell's outcome: ("build", the CUDA flags), ("pypi", the packages pip is asked for) or ("refused", line)."""
    if branch is None and architectures is None:
        return "refused", NATIVE
    cuda12 = branch in ("R535", "R550", "R570")
    if toolkit in ("complete-12.4", "complete-12.9") or (toolkit == "complete-13.0" and not cuda12):
        return "build", machine_flags(tmp, TOOLKITS[toolkit][0])
    if toolkit == "complete-13.0":
        why = f"built with CUDA 13.0, and {driver_text(branch or '')}; install a toolkit this driver runs"
        return "refused", f"make setup GPU=cuda: the CUDA toolkit at {tmp}/cuda-13.0: {why}"
    if cuda12:
        why = f"built with CUDA 13.0, and {driver_text(branch or '')}; {PYPI_FIX}"
        return "refused", f"make setup GPU=cuda: PyPI's CUDA compiler: {why}"
    return "pypi", f"install --quiet {PYPI}"


CELLS = [(branch, toolkit, None) for branch in (*BRANCHES, None) for toolkit in (*TOOLKITS, "none")]
CELLS += [(None, toolkit, "90") for toolkit in (*TOOLKITS, "none")]


@pytest.mark.parametrize(("branch", "toolkit", "architectures"), CELLS)
def test_make_setup_gpu_cuda_on_each_host(
    tmp_path: Path, branch: str | None, toolkit: str, architectures: str | None
) -> None:
    made = run_make(tmp_path, branch, toolkit, architectures)
    outcome, detail = expected(branch, toolkit, architectures, tmp_path)
    if outcome == "refused":
        assert made.status != 0 and made.refusal() == detail, made.output
        assert made.pip == [] and "pip wheel" not in made.output  # stopped before any download or build
    elif outcome == "pypi":
        assert made.status != 0 and made.pip == [detail], made.output  # the guard stopped the ~1 GB install
        assert "pip wheel" not in made.output
    else:
        assert made.status == 0 and made.pip == [], made.output
        arch = architectures or "native"
        assert made.cmake_args().endswith(f"-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES={arch} {detail}")
        assert (made.view / "lib64" / "libcublas.so").is_symlink()  # the server's loader path, made for real
        assert made.view.parent.joinpath(".cuda-arch").read_text().strip() == arch
        assert (made.view / "compression").read_text() == "speed\n"  # what `make gpu-check` reads


def test_the_architectures_are_remembered_and_a_change_decides_again(tmp_path: Path) -> None:
    """Named once on a submit host without a GPU, the architectures stay (a later `make bench` keeps them); naming
    `native` there afterwards is refused again, not served from the cached decision."""
    first = run_make(tmp_path, None, "complete-12.4", "90")
    assert first.status == 0, first.output
    venv = tmp_path / "venv"
    env = dict(os.environ, PATH="/usr/bin:/bin", CUDA_PATH=str(tmp_path / "no-cuda"), HOME=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([str(HERE / "nvml_shim"), str(HERE / "pip_guard")])
    env |= {"AGENTBENCH_HOST": str(tmp_path / "host.json"), "PIP_GUARD": str(tmp_path / "pip-asked.txt")}
    make = ["make", "-n", "-C", str(ROOT), "setup", "GPU=cuda", f"VENV={venv}", f"CACHE={tmp_path / 'cache'}"]
    again = subprocess.run(make, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "-DCMAKE_CUDA_ARCHITECTURES=90 " in again.stdout, again.stdout + again.stderr
    native = subprocess.run([*make, "CUDA_ARCHITECTURES=native"], env=env, capture_output=True, text=True, timeout=120)
    assert native.returncode != 0 and NATIVE in native.stderr, native.stdout + native.stderr
