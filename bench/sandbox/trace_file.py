"""Reading the trace a sandbox left in its out folder, which the sandbox may have turned into a trap.

The bench runs as root and the folder was writable from inside: events.jsonl may have become a symlink to a
root-only file, a FIFO that blocks forever, /dev/zero, or gigabytes, or have been replaced by a file the model's
commands wrote. read_trace_safely reads it only as a regular file, without following links or blocking, up to a
size cap, and (when the sandbox says who wrote it) only if that user owns it.
"""

from __future__ import annotations

import stat
from pathlib import Path

from bench.untrusted import read_untrusted

TRACE_LIMIT = 64 * 1024 * 1024  # bytes; a 30-step trace is a few hundred kB


def over_cap(path: Path, max_bytes: int = TRACE_LIMIT) -> bool:
    """Whether `path` is a regular file (not a link) larger than `max_bytes`: a trace the agent let grow too long."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size > max_bytes


def read_trace_safely(
    path: Path, max_bytes: int = TRACE_LIMIT, *, owner_uid: int | None = None
) -> tuple[str | None, str | None]:
    """(text, None), or (None, a one-line reason that becomes the run's infra_error)."""
    text, problem = read_untrusted(path, max_bytes, owner_uid=owner_uid)
    return text, None if problem is None else f"the event trace was not read: {problem}"
