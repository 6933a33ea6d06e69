"""A small real disk for the tests of a full one: a 4 MiB tmpfs of the test's own (mounting needs root, as CI's
container runs the suite), and filling it up."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted() -> Iterator[Path]:
    """The tmpfs, unmounted and removed after; not root: fails under CI, skips elsewhere."""
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("mounting a tmpfs needs root: run the tests as root, as CI's container does")
        pytest.skip("mounting a tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="bench-small-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


def fill(disk: Path) -> None:
    """Writes into `disk` until it takes no more."""
    with open(disk / "filler", "wb") as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
            f.flush()
