"""Work done once per host however many processes start it together (a model fetched, an image built, a model
assembled): each holds flock(2) on one lock file while it checks whether the work is done and does it if not.

The lock is the kernel's, on the file's open description: threads of one process exclude each other as processes
do, and it is let go of when its holder exits, however it exits (kill -9 included). The lock files stay (empty).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)


def locks_folder() -> Path:
    """The bench's own lock files (~/.cache/agent-bench/locks, or $XDG_CACHE_HOME's)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agent-bench" / "locks"


def lock_file(name: str) -> Path:
    """The lock file for a piece of work named `name` (an image tag, say), as a file name."""
    return locks_folder() / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock")


@contextmanager
def held(path: Path, waiting_for: str) -> Iterator[None]:
    """Hold the lock `path` (made when missing) until the block ends; while another holds it, wait, saying once
    that this process waits for `waiting_for`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for %s (another process holds %s)", waiting_for, path)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield
