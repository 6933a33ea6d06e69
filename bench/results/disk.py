"""A file the bench could not write (a full disk, a quota, a read-only or failing file system): one line, and the
bench ends with the rows already written intact, exactly as when the row write itself fails (bench.results.append).

Artifacts (a run's trace, logs, diff, junit.xml, score.json, reports and figures) are written in many places; they
all go through Python's file calls, whose OSError carries the errno. The runner turns one of these errnos into a
DiskError for its run, and the CLI turns any that escapes a command into the same one line (exit 2), never a
traceback and never exit 1 (which means "some runs were infra_error").
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from bench.errors import ResultsError

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
PROBE_BYTES = 1024 * 1024  # what a grading or a diff needs at least: a pytest report, a git index


class DiskError(ResultsError):
    """A file could not be written: the bench ends (the next run would fail the same way), its rows intact."""


def is_disk_error(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in DISK_ERRNOS


def disk_error(error: OSError, results: Path | None = None, folder: Path | None = None) -> DiskError:
    """The one line: what could not be written (the file, else the folder it was written in), why, and that the rows
    are intact and how to go on. A write that fails after its file opened names no file: then `folder` says where."""
    where = f" {error.filename}" if error.filename else f" into {folder}" if folder else ""
    text = f"cannot write{where}: {error.strerror or error}"
    if results is not None:
        text += f"; the rows already in {results} are intact. Free some space, then continue with --resume"
    return DiskError(text)


def temp_full(folder: Path | None = None) -> str | None:
    """Why the temporary folder takes no more writes (full, a quota, read-only), or None when it does: asked when a
    child process (git, a grading pytest) failed in it, to tell the machine's fault from the agent's."""
    where = Path(folder or tempfile.gettempdir())
    try:
        with tempfile.TemporaryFile(dir=where) as probe:
            probe.write(b"\0" * PROBE_BYTES)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as e:
        if not is_disk_error(e):
            raise
        return f"the temporary folder {where} takes no more writes ({e.strerror})"
    return None
