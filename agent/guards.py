"""Guards that hold whatever the shell does: the repository's own tests are put back when anything changes them.

write_file and edit_file refuse to change an existing test, but a command can (`pytest --junitxml=test_calc.py`,
`pytest --basetemp=tests`, a new test file that rewrites an old one when pytest collects it, a hard link written
through). So the agent keeps the bytes of every test file that exists at start, and after every tool call, every
command and every done check it compares each one by content hash and puts back what changed: a new file in place
(which also breaks any hard link to it), with its folders recreated where they were removed or replaced.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent.tools import is_test_file, repo_files

PLANTED_NAMES = ("conftest.py", "__init__.py")  # files that pytest runs before any test, besides the tests


@dataclass(frozen=True)
class Restored:
    """A protected test that was found changed and put back. `was`: changed, deleted, replaced, hard-linked or
    unreadable."""

    path: str
    was: str

    def describe(self) -> str:
        return f"{self.path} ({self.was})"


@dataclass(frozen=True)
class _Original:
    data: bytes
    digest: str
    mode: int


class ProtectedTests:
    """The test files present at start, kept as they were, and put back whenever they change."""

    def __init__(self, root: Path, paths: Iterable[str]) -> None:
        self.root = root
        self.originals: dict[str, _Original] = {}
        for path in sorted(paths):
            full = root / path
            if os.path.realpath(full) != str(full) or not full.is_file():
                continue  # a link at start: its content lives elsewhere, and putting back a copy would change it
            try:
                data = full.read_bytes()
            except OSError:
                continue  # the agent's user cannot read it (noted at start): nothing to keep
            self.originals[path] = _Original(data, _digest(data), stat.S_IMODE(full.stat().st_mode))

    def restore_changes(self) -> list[Restored]:
        """Put back every protected test that differs from the start; returns what was put back."""
        restored = []
        for path, original in self.originals.items():
            was = self._damage(path, original)
            if was is not None:
                self._put_back(path, original)
                restored.append(Restored(path, was))
        return restored

    def _damage(self, path: str, original: _Original) -> str | None:
        full = self.root / path
        if os.path.realpath(full) != str(full):  # the file, or a folder on its way, is now a link
            return "replaced" if os.path.lexists(full) else "deleted"
        try:
            info = full.lstat()
        except FileNotFoundError:
            return "deleted"
        except NotADirectoryError:  # a folder on its way became a file
            return "replaced"
        except OSError:  # a folder on its way can no longer be searched
            return "unreadable"
        if not stat.S_ISREG(info.st_mode):
            return "replaced"
        try:
            if _digest(full.read_bytes()) != original.digest:
                return "changed"
        except OSError:  # its mode was changed so that it cannot be read
            return "unreadable"
        return "hard-linked" if info.st_nlink > 1 else None

    def _put_back(self, path: str, original: _Original) -> None:
        folder = self.root
        for part in Path(path).parts[:-1]:  # recreate the folders, replacing links and files in their way
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
            folder.mkdir(exist_ok=True)
            if not os.access(folder, os.R_OK | os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
                folder.chmod(stat.S_IMODE(folder.stat().st_mode) | stat.S_IRWXU)  # closed to its owner: open it
        full = folder / Path(path).name
        if full.is_dir() and not full.is_symlink():
            shutil.rmtree(full)
        # A new file moved into place: a hard link to the old one keeps the old content, not the test.
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".restore-")
        with os.fdopen(fd, "wb") as f:
            f.write(original.data)
        os.chmod(temporary, original.mode)
        os.replace(temporary, full)


def planted(root: Path, files_at_start: Iterable[str]) -> list[str]:
    """Test files, conftest.py and __init__.py files that exist now and did not at start: the agent made them."""
    before = set(files_at_start)
    found = []
    for path in repo_files(root):
        relative = path.relative_to(root).as_posix()
        if relative not in before and (is_test_file(path.name) or path.name in PLANTED_NAMES):
            found.append(relative)
    return found


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
