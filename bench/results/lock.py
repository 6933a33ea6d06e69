"""One bench per results file: a lock on `<csv>.lock`, held for the bench's whole life.

Two benches given the same --out would each run every run the file lacks, and so run it twice. The second one is
refused at once, with one line naming the holder. The lock is flock(2) on a file beside the CSV: the kernel lets go
of it when the holder exits, however it exits (kill -9 included), so a stale lock file never blocks anyone. The file
itself stays (removing it would let a third bench lock a new file while a second still waits on the old one).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bench.errors import ResultsError


class ResultsLock:
    """Held from acquire() until release() (or this process's end)."""

    def __init__(self, out: Path) -> None:
        self.path = out.with_name(out.name + ".lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ResultsError(
                f"another bench (pid {holder}) is writing {self.path.with_suffix('')}: wait for it to end, or choose "
                "another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor lets go of the lock
            self.fd = None
