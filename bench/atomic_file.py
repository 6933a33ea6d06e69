"""The one atomic write: a file replaced whole or not at all, its new content on disk before it takes the name."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> None:
    """`data` in place of `path`: written to a new file beside it, synced, then renamed over it (and the rename synced
    too), so that a reader, or the file system after a crash, finds the old content or the new one, never a part."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
