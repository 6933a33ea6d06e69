"""The throwaway copy that a done check of part3+, strict and late runs pytest in, and what it may not hold or lose.

- The copy is the repository without what is left out (what the agent planted), with the start's pytest
  configuration files at its root (or none), plain files only (a FIFO or a device would block the copy), and
  without what the agent's user cannot read (as pytest, run as that user, could not read it either).
- A link in the copy that leads out of it (to a folder beside the repository, or back into the repository by an
  absolute path) would let pytest collect what lies there, a conftest.py included, which no scan of the repository
  sees: the check refuses a repository holding one (`links_out`) instead of following it.
- Every file of the copy is hashed before pytest runs and again after it (`state`): a file that is new, changed or
  gone afterwards was written while the check ran, and the check proves nothing (`changes`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agent.pytest_config import CONFIG_FILES
from agent.tools import repo_files, skipped_dir

NOT_REGULAR = "not a regular file"  # a FIFO, a device or a socket: never copied
UNREADABLE = "unreadable"  # a file the agent's user cannot read (or that went away while it was read): not copied


def file_digest(path: Path) -> str:
    """sha256 of a regular file, read in pieces; links and other files are named by what they are, and so is a file
    the agent's user cannot read (UNREADABLE)."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(info.st_mode):
            return NOT_REGULAR
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return UNREADABLE
    return digest.hexdigest()


@contextmanager
def scratch_folder() -> Iterator[str]:
    """A temporary folder removed at the end, tried again for a moment: a process just killed in it may still finish
    its last write while the folder is being removed (seen under load as "Directory not empty")."""
    holder = tempfile.TemporaryDirectory(prefix="agent-done-", ignore_cleanup_errors=True)  # resets modes it meets
    try:
        yield holder.name
    finally:
        for _ in range(50):
            holder.cleanup()
            if not os.path.lexists(holder.name):
                break
            time.sleep(0.1)


def make_copy(root: Path, folder: str, left_out: Iterable[str], config: dict[str, bytes]) -> Path:
    """A copy of the repository in `folder`, without `left_out`, with the start configuration `config`."""
    copy = Path(folder) / root.name

    def ignored(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n.endswith((".pyc", ".pyo")) or skipped_dir(folder, n)}

    # Files or folders the agent's user cannot read are left out, as every scan of the repository leaves them out.
    with contextlib.suppress(shutil.Error):
        shutil.copytree(root, copy, symlinks=True, ignore=ignored, copy_function=_copy_regular_file)
    for path in left_out:
        (copy / path).unlink(missing_ok=True)
    for name in CONFIG_FILES:
        (copy / name).unlink(missing_ok=True)
        if name in config:
            (copy / name).write_bytes(config[name])
    return copy


def links_out(copy: Path) -> list[str]:
    """The links in `copy` (at any depth, not followed) that lead outside it, as `path -> target`."""
    found = []
    real_copy = Path(os.path.realpath(copy))
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not skipped_dir(folder, d)]  # a virtual environment in the repository
        for name in sorted([*dirs, *files]):
            path = Path(folder) / name
            if path.is_symlink():
                real = Path(os.path.realpath(path))
                if real != real_copy and real_copy not in real.parents:
                    found.append(f"{path.relative_to(copy).as_posix()} -> {os.readlink(path)}")
    return found


def state(folder: Path) -> dict[str, str]:
    """Every file the copy of `folder` holds (caches left out, and what is no plain file or link), by content hash."""
    found = {}
    for path in repo_files(folder):
        digest = file_digest(path)
        if digest != NOT_REGULAR:
            found[path.relative_to(folder).as_posix()] = digest
    return found


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What differs between two states, as `path (changed|new|gone)`."""
    found = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            found.append(f"{path} (gone)")
        elif path not in before:
            found.append(f"{path} (new)")
        elif before[path] != after[path]:
            found.append(f"{path} (changed)")
    return found


def _copy_regular_file(source: str, destination: str) -> None:
    """Copy plain files only: a FIFO or a device the agent made would block or never end."""
    if stat.S_ISREG(os.lstat(source).st_mode):
        shutil.copy2(source, destination)
