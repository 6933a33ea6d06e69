"""The copy a run is graded in, made clean: what the agent planted for pytest or Python to run at start-up (conftest.py,
sitecustomize.py, new __init__.py files where pytest would import them as the tests' package) and symlinks leading
out are deleted, the visible tests put back, and the bench's own ini file written (bench/score/grading.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.fixtures.fixture import Fixture
from bench.fixtures.workcopy import run_git
from bench.score.sessions import GRADING_DIR, INI_FILE, INI_TEXT
from bench.score.tests_added import is_test_file

PLANTED_NAMES = frozenset({"conftest.py", "sitecustomize.py", "usercustomize.py"})
PACKAGE_FILE = "__init__.py"  # a new one in a test folder is run by pytest before any test: planted too


def changed_paths(copy: Path, base: str) -> list[str]:
    """Every path that differs from commit `base` in our grading copy: both sides of a rename, ignored files too."""
    run_git(copy, "add", "-A", "--force", "--", ".")
    names = run_git(copy, "diff", "--cached", "--name-only", "--no-renames", "-z", base)
    return sorted(name for name in names.split("\0") if name)


def remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _put(src: Path, dest: Path) -> None:
    """Copy a file over whatever the agent left at `dest` (a file, a folder, a symlink pointing anywhere)."""
    remove(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _leads_out(path: Path, root: Path) -> bool:
    if not path.is_symlink():
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return True


def _test_package_folders(copy: Path, fx: Fixture) -> set[Path]:
    """The root and every folder that holds a test file or lies on the way to one: pytest imports their
    __init__.py as the tests' package before the tests themselves."""
    folders = {copy}
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not (folder == str(copy) and d == ".git")]
        if any(is_test_file(name) for name in files):
            folders.update(parent for parent in [Path(folder), *Path(folder).parents] if parent.is_relative_to(copy))
    for rel in fx.visible_tests:
        folders.update(parent for parent in (copy / rel).parents if parent.is_relative_to(copy))
    return folders


def _planted(path: Path, copy: Path, fx: Fixture, test_folders: set[Path]) -> bool:
    if _leads_out(path, copy):
        return True
    if path.is_dir() and not path.is_symlink():
        return False
    if path.name in PLANTED_NAMES:
        return True
    new = not (fx.path / path.relative_to(copy)).is_file()
    return path.name == PACKAGE_FILE and new and path.parent in test_folders


def clean_grading_copy(fx: Fixture, copy: Path) -> list[str]:
    """Delete planted pytest/Python start-up files and symlinks leading out, restore the visible tests, and write
    our ini file; returns what was deleted. Run again after any step that ran the agent's code in the copy."""
    removed = []
    test_folders = _test_package_folders(copy, fx)
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not (folder == str(copy) and d == ".git")]
        for name in dirs + files:
            path = Path(folder, name)
            if _planted(path, copy, fx, test_folders):
                remove(path)
                removed.append(path.relative_to(copy).as_posix())
    for rel in fx.visible_tests:
        _put(fx.path / rel, copy / rel)
    remove(copy / GRADING_DIR)
    (copy / GRADING_DIR).mkdir()
    (copy / INI_FILE).write_text(INI_TEXT)
    return removed
