"""Reading a file that code we do not trust could have replaced: a trace the sandbox wrote, a report the grading
pytest wrote. Such a file may have become a symlink to a secret, a FIFO that never ends, /dev/zero, or gigabytes.

Every folder below `trusted` and the file itself are opened without following links (O_NOFOLLOW), without
blocking (O_NONBLOCK: a FIFO opens at once), and only a regular file with one link and at most `max_bytes` is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}
NO_FOLLOW = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def _open_beneath(path: Path, trusted: Path) -> int:
    """A descriptor for `path`, opened one component at a time below `trusted`, following no link."""
    parts = path.relative_to(trusted).parts
    fd = os.open(trusted, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, NO_FOLLOW | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], NO_FOLLOW, dir_fd=fd)
    finally:
        os.close(fd)


def read_untrusted(
    path: Path, max_bytes: int, *, trusted: Path | None = None, owner_uid: int | None = None
) -> tuple[str | None, str | None]:
    """(text, None) for a regular file of at most `max_bytes` (owned by `owner_uid` when given), else
    (None, a one-line reason). Undecodable bytes are replaced."""
    try:
        fd = _open_beneath(path, trusted or path.parent)
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return None, f"{path} (or a folder on its way) is a symbolic link or not a folder: not read"
        return None, f"{path} could not be opened: {e.strerror}"
    except ValueError:  # not below `trusted`
        return None, f"{path} is not inside {trusted}: not read"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, f"{path} is {KINDS.get(stat.S_IFMT(info.st_mode), 'not a regular file')}: not read"
        if info.st_nlink != 1:  # a hard link to some other file, not a file of its own
            return None, f"{path} has {info.st_nlink} hard links: not read"
        if owner_uid is not None and info.st_uid != owner_uid:
            return None, f"{path} belongs to uid {info.st_uid}, not to the writer (uid {owner_uid}): not read"
        if info.st_size > max_bytes:
            return None, f"{path} holds {info.st_size} bytes, more than the {max_bytes} allowed: not read"
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as e:
        return None, f"{path} could not be read: {e.strerror}"
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return None, f"{path} grew past {max_bytes} bytes while being read: not read"
    return data.decode("utf-8", errors="replace"), None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
