"""One bench per results file: a lock on the results file itself, held for the bench's whole life.

Two benches given the same file would each run every run it lacks, and so run it twice. The second one is refused at
once, with one line naming the holder. The lock is flock(2) on the CSV's own inode, opened through its resolved path:
a symbolic link or another spelling of the same file takes the same lock, and no lock file is ever left behind. The
kernel lets go of it when the holder exits, however it exits (kill -9 included). A bench that created the file and
wrote nothing to it removes it again, so a start that was refused or failed leaves nothing.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bench.errors import ResultsError

PROC_LOCKS = Path("/proc/locks")


class ResultsLock:
    """Held from acquire() until release() (or this process's end)."""

    def __init__(self, out: Path) -> None:
        self.path = Path(os.path.realpath(out))  # links and other spellings of one file: one lock
        self.fd: int | None = None
        self.created = False

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.created = _open(self.path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = holder_pid(os.fstat(fd).st_ino)
            os.close(fd)
            self._remove_if_empty()
            raise ResultsError(
                f"another bench (pid {holder or 'unknown'}) is writing {self.path}: wait for it to end, or choose "
                "another --out"
            ) from None
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            self._remove_if_empty()  # before letting go: nobody else can have started writing it
            os.close(self.fd)  # closing the last descriptor lets go of the lock
            self.fd = None

    def _remove_if_empty(self) -> None:
        if self.created and self.path.exists() and self.path.stat().st_size == 0:
            self.path.unlink()
        self.created = False


def _open(path: Path) -> tuple[int, bool]:
    """A descriptor of the file (created when absent) and whether this call created it."""
    flags = os.O_RDONLY | os.O_CLOEXEC  # flock needs no write access; the rows are appended through their own fd
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        return os.open(path, flags), False


def holder_pid(inode: int) -> int | None:
    """The pid holding an flock on this inode, from /proc/locks (`1: FLOCK ADVISORY WRITE <pid> <dev>:<inode> ...`)."""
    try:
        lines = PROC_LOCKS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
            return int(fields[4]) if fields[4].isdigit() else None
    return None


def writer_of(path: Path) -> int | None:
    """The pid of the bench writing `path` now (0 when it cannot be told), or None when none holds it."""
    try:
        fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder_pid(os.fstat(fd).st_ino) or 0
    finally:
        os.close(fd)  # a shared lock taken here goes with it
    return None
