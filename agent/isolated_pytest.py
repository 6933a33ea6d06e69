"""pytest in a throwaway copy of the repository, with nothing the agent wrote able to change how pytest runs.

For the done checks of part3+ and strict (agent/done.py). What the agent could otherwise plant:
- configuration (pytest.ini `addopts = -p forcepass` or `--ignore=test_todo.py`, pyproject's `python_files`): the
  copy gets the pytest configuration files of the start snapshot at its root (or none), pytest is pointed at the
  one pytest would have chosen at start (`-c`, or an empty file of the agent's own outside the copy), with
  `--rootdir` and `--confcutdir` at the copy, so no file elsewhere is looked for;
- plugins: `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` (no entry points of anything installed), PYTEST_ADDOPTS and
  PYTEST_PLUGINS unset, `-p no:cacheprovider`, no bytecode files;
- a run that collects nothing (exit 5) is no pass;
- a test changed while pytest runs (a conftest.py may start a process that rewrites it): the protected tests of
  the copy are compared with the start before and after the run, and everything the run started is killed when it
  ends, even what left its session (agent/shell.py kill_leftovers).
What runs is still the repository's code: a module under test that patches pytest when imported is not caught.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.shell import CommandOutput, run_command
from agent.tools import OUTPUT_LIMIT, SKIPPED_DIRS

# The files pytest reads its configuration from, in the order it looks for them, and how it tells that a file
# holds pytest's section (pytest.toml and pytest.ini count even when empty).
CONFIG_FILES: dict[str, re.Pattern[str] | None] = {
    "pytest.toml": None,
    ".pytest.toml": None,
    "pytest.ini": None,
    ".pytest.ini": None,
    "pyproject.toml": re.compile(r"^\s*\[\s*tool\.pytest(\.ini_options)?\s*\]", re.MULTILINE),
    "tox.ini": re.compile(r"^\s*\[\s*pytest\s*\]", re.MULTILINE),
    "setup.cfg": re.compile(r"^\s*\[\s*tool:pytest\s*\]", re.MULTILINE),
}
MAX_CONFIG_BYTES = 1_000_000
# `python -m pytest` would import a pytest.py from the repository first: drop the current folder from the front of
# the path before importing pytest, and put it at the end, where the repository's modules are still found.
PYTEST_MAIN = (
    "import os, sys\n"
    "if sys.path and sys.path[0] in ('', os.getcwd()): sys.path.pop(0)\n"
    "import pytest\n"
    "sys.path.append(os.getcwd())\n"
    "raise SystemExit(pytest.console_main())"
)
PYTEST = f"PYTHONDONTWRITEBYTECODE=1 {shlex.quote(sys.executable)} -c {shlex.quote(PYTEST_MAIN)} -q -p no:cacheprovider"
ISOLATED_ENV = "env -u PYTEST_ADDOPTS -u PYTEST_PLUGINS PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"
NO_TESTS_COLLECTED = 5
COLLECTED = re.compile(r"(\d+) tests? collected|no tests collected")


def start_config(root: Path) -> dict[str, bytes]:
    """The pytest configuration files at the repository's root, as they are now (taken at the start)."""
    found = {}
    for name in CONFIG_FILES:
        path = root / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_CONFIG_BYTES:
            found[name] = path.read_bytes()
    return found


def chosen_config(config: dict[str, bytes]) -> str | None:
    """The file pytest would have read its configuration from at start, among `config`."""
    for name, section in CONFIG_FILES.items():
        if name in config and (section is None or section.search(config[name].decode("utf-8", "replace"))):
            return name
    return None


def file_digest(path: Path) -> str:
    """sha256 of a regular file, read in pieces; links and other files are named by what they are."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "link:" + os.readlink(path)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class IsolatedRun:
    output: CommandOutput
    changed_tests: list[str]  # protected tests that differed from the start in the copy, before or after the run
    new_tests: int | None  # tests pytest collects in `count_tests_in` (None when not asked)


@contextmanager
def _scratch_folder() -> Iterator[str]:
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


@contextmanager
def _copy(root: Path, left_out: Iterable[str], config: dict[str, bytes]) -> Iterator[tuple[Path, str]]:
    """A copy of the repository without `left_out`, with the start configuration; yields it and pytest's options."""
    with _scratch_folder() as folder:
        copy = Path(folder) / root.name
        ignored = shutil.ignore_patterns(*SKIPPED_DIRS, "*.pyc", "*.pyo")
        shutil.copytree(root, copy, symlinks=True, ignore=ignored, copy_function=_copy_regular_file)
        for path in left_out:
            (copy / path).unlink(missing_ok=True)
        for name in CONFIG_FILES:
            (copy / name).unlink(missing_ok=True)
            if name in config:
                (copy / name).write_bytes(config[name])
        chosen = chosen_config(config)
        config_file = copy / chosen if chosen else Path(folder) / "pytest.ini"
        if chosen is None:
            config_file.write_text("[pytest]\n")  # the agent's own: no options at all
        options = f"-c {shlex.quote(str(config_file))} --rootdir={shlex.quote(str(copy))}"
        yield copy, f"{options} --confcutdir={shlex.quote(str(copy))}"


def run_isolated(
    root: Path,
    left_out: Iterable[str],
    config: dict[str, bytes],
    protected: dict[str, str],
    timeout: float,
    count_tests_in: list[str] | None = None,
) -> IsolatedRun:
    """pytest in a copy without `left_out`; `protected`: path -> start digest of the tests that must not change."""
    with _copy(root, left_out, config) as (copy, options):
        changed = _changed(copy, protected)
        command = f"{ISOLATED_ENV} {PYTEST} {options}"
        output = run_command(command, copy, timeout, OUTPUT_LIMIT, kill_leftovers=True)
        changed += [p for p in _changed(copy, protected) if p not in changed]
        new_tests = None
        if count_tests_in is not None:
            new_tests = _count_tests(f"{command} --collect-only", copy, count_tests_in, timeout)
    return IsolatedRun(output, changed, new_tests)


def _count_tests(command: str, copy: Path, files: list[str], timeout: float) -> int:
    """How many tests pytest collects from `files` (its own count, so text that looks like a test is not one)."""
    present = [f for f in files if (copy / f).is_file()]
    if not present:
        return 0
    return collected_count(
        run_command(f"{command} {shlex.join(present)}", copy, timeout, OUTPUT_LIMIT, kill_leftovers=True)
    )


def collected_count(output: CommandOutput) -> int:
    """The count in the last line of `pytest --collect-only -q` (0 when the collection failed)."""
    counts = COLLECTED.findall(output.text)
    return int(counts[-1] or 0) if output.exit_code == 0 and counts else 0


def _changed(copy: Path, protected: dict[str, str]) -> list[str]:
    changed = []
    for path, digest in protected.items():
        try:
            now = file_digest(copy / path)
        except OSError:
            now = "gone"
        if now != digest:
            changed.append(path)
    return changed


def _copy_regular_file(source: str, destination: str) -> None:
    """Copy plain files only: a FIFO or a device the agent made would block or never end."""
    if stat.S_ISREG(os.lstat(source).st_mode):
        shutil.copy2(source, destination)
