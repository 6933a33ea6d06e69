"""Stand-in CUDA toolkits for the host matrix: the layout .ci/cuda_toolkit.py inspects, with an nvcc that answers
`-v --dryrun` and `--version` as the real one does (data/nvcc-dryrun.txt), and nothing that compiles.

- complete: bin/nvcc, the runtime and cuBLAS headers and libraries, lib64/stubs/libcuda.so, version.json;
- partial: nvcc and the runtime only, no cuBLAS and no driver stub (the build machines' CUDA 13.0 from PyPI's wheels
  is like that), reached through a wrapper script on PATH as /usr/local/bin/nvcc is there.
"""

from __future__ import annotations

import json
from pathlib import Path

from host_matrix.recorded import sections

HEADERS = ("cuda_runtime.h", "cuda.h")
CUBLAS_HEADERS = ("cublas_v2.h",)
RUNTIME = ("libcudart.so", "libcudart.so.12")
CUBLAS = ("libcublas.so", "libcublasLt.so")


def nvcc_script(top: Path, release: str) -> str:
    answers = sections("nvcc-dryrun.txt")
    dryrun = "\n".join(answers["dryrun"]).replace("{top}", str(top))
    version = "\n".join(answers["version"]).replace("{release}", release)
    return (
        "#!/bin/sh\n"
        f'case " $* " in *" --dryrun "*) cat >&2 <<\'EOF\'\n{dryrun}\nEOF\nexit 0;; esac\n'
        f'case " $* " in *" --version "*) cat <<\'EOF\'\n{version}\nEOF\nexit 0;; esac\n'
        'echo "stand-in nvcc: compiles nothing" >&2; exit 1\n'
    )


def make_toolkit(root: Path, release: str, complete: bool) -> Path:
    """A toolkit tree at `root`; returns the folder to put on PATH (holding an `nvcc`)."""
    (root / "bin").mkdir(parents=True)
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text(nvcc_script(root, release))
    nvcc.chmod(0o755)
    (root / "include").mkdir()
    (root / "lib64").mkdir()
    for header in HEADERS + (CUBLAS_HEADERS if complete else ()):
        (root / "include" / header).write_text("/* stand-in */\n")
    for library in RUNTIME + (CUBLAS if complete else ()):
        (root / "lib64" / library).write_bytes(b"")
    if complete:
        (root / "lib64" / "stubs").mkdir()
        (root / "lib64" / "stubs" / "libcuda.so").write_bytes(b"")
        (root / "version.json").write_text(json.dumps({"cuda": {"version": f"{release}.1"}}))
        return root / "bin"
    wrapper = root.parent / f"{root.name}-path" / "nvcc"  # like /usr/local/bin/nvcc: a script that runs the real one
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {nvcc} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper.parent
