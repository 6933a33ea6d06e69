"""Where a CUDA toolkit is, as its own nvcc says: shared by `make setup GPU=cuda` (.ci/cuda_toolkit.py) and the GPU
rehearsal's build of llama-server (bench.rehearsal.build_llama). Standard library only."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

LIBRARY_DIRS = ("lib64", "lib", "targets/x86_64-linux/lib")


def nvcc_top(nvcc: str) -> Path | None:
    """The toolkit root nvcc itself uses (its TOP), which also sees through a wrapper script on PATH."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "empty.cu"
        source.write_text("")
        try:
            done = subprocess.run(
                [nvcc, "-v", "--dryrun", "-c", str(source)], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    found = re.search(r"^#\$ TOP=(.+)$", done.stderr + done.stdout, re.MULTILINE)
    return Path(found.group(1).strip()).resolve() if found else None


def library_dir(root: Path, name: str) -> Path | None:
    """The folder of `root` that holds the library `name` (a toolkit keeps them in one of LIBRARY_DIRS)."""
    for sub in LIBRARY_DIRS:
        if (root / sub / name).exists():
            return root / sub
    return None
