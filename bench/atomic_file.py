"""The one atomic write: a file replaced whole or not at all, its new content on disk before it takes the name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def writing_atomically(path: Path) -> Iterator[BinaryIO]:
    """A new file beside `path` to write (or stream) into; when the block ends without an error it is synced, then
    renamed over `path` (and the rename synced too), so that a reader, or the file system after a crash, finds the
    old content or the new one, never a part. An error in the block leaves `path` as it was and no file beside it."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as f:
            yield f
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


def write_atomically(path: Path, data: bytes) -> None:
    """`data` in place of `path`, atomically (writing_atomically)."""
    with writing_atomically(path) as f:
        f.write(data)
