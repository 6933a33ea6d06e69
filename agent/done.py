"""The done check, run when Flint answers without a tool call.

Every preset requires pytest to pass on the repository. pytest is started so that nothing in the repository can
stand in for it (a `pytest.py` the agent wrote is not imported in its place), without bytecode or cache files.

What the agent planted (test files, conftest.py and __init__.py files that did not exist at start) is reported.
part2, clearing and part3 run pytest in the repository as it is, as the article did. part3+ and strict do not trust
what was planted: they run pytest in a copy of the repository without the planted conftest.py files, and, when
anything was planted, once more in a copy without any planted file, so that the repository's own tests pass on
their own and not only next to test code that patches what they test.

`strict` also requires that a non-test file differs from the start (or is new, or is gone) and that a test function
exists that did not at start; the model is told exactly what is missing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agent import prompts
from agent.guards import planted
from agent.shell import CommandOutput, run_command
from agent.tools import OUTPUT_LIMIT, SKIPPED_DIRS, is_test_file, repo_files

TEST_FUNCTION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(", re.MULTILINE)
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
NO_TESTS_COLLECTED = 5


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, str]  # relative path -> sha256 of the content
    tests: frozenset[tuple[str, str]]  # (test file, test function name)


@dataclass(frozen=True)
class DoneResult:
    passed: bool
    pytest_exit: int | None  # None: pytest timed out
    summary: str  # pytest's last line
    missing: list[str] = field(default_factory=list)
    planted: list[str] = field(default_factory=list)
    feedback: str | None = None  # what the model is told when not done


def pytest_missing() -> str | None:
    """Why the done check cannot run here, or None: it runs pytest with this very interpreter."""
    if importlib.util.find_spec("pytest") is None:
        return f"pytest is not installed for {sys.executable}: install it there (pip install pytest)"
    return None


def take_snapshot(root: Path) -> Snapshot:
    files: dict[str, str] = {}
    tests: set[tuple[str, str]] = set()
    for path in repo_files(root):
        relative = path.relative_to(root).as_posix()
        data = path.read_bytes()
        files[relative] = hashlib.sha256(data).hexdigest()
        if is_test_file(path.name):
            text = data.decode("utf-8", errors="replace")
            tests.update((relative, name) for name in TEST_FUNCTION.findall(text))
    return Snapshot(files, frozenset(tests))


def check_done(root: Path, start: Snapshot, *, strict: bool, trust_planted: bool, timeout: float) -> DoneResult:
    made = planted(root, start.files)
    conftests = [p for p in made if Path(p).name == "conftest.py"]
    if trust_planted:
        output = run_command(PYTEST, root, timeout, OUTPUT_LIMIT)
        own = None
    else:
        output = _pytest_in_copy(root, conftests, timeout)
        own = _pytest_in_copy(root, made, timeout) if made and output.exit_code == 0 else None
    missing = unmet_conditions(start, take_snapshot(root)) if strict else []
    summary = _summary(output, timeout)
    if output.exit_code != 0:
        text = output.text if output.exit_code is not None else summary
        if not trust_planted and conftests:
            text += prompts.planted_distrusted(conftests)
        return DoneResult(False, output.exit_code, summary, missing, made, prompts.tests_failed(text))
    if own is not None and own.exit_code not in (0, NO_TESTS_COLLECTED):
        text = own.text if own.exit_code is not None else _summary(own, timeout)
        return DoneResult(False, own.exit_code, _summary(own, timeout), missing, made, prompts.own_tests_fail(text))
    if missing:
        return DoneResult(False, output.exit_code, summary, missing, made, prompts.not_done_yet(missing))
    return DoneResult(True, output.exit_code, summary, [], made)


def _pytest_in_copy(root: Path, left_out: list[str], timeout: float) -> CommandOutput:
    """pytest in a throwaway copy of the repository without the files `left_out`."""
    with tempfile.TemporaryDirectory(prefix="agent-done-") as folder:
        copy = Path(folder) / root.name
        ignored = shutil.ignore_patterns(*SKIPPED_DIRS, "*.pyc", "*.pyo")
        shutil.copytree(root, copy, symlinks=True, ignore=ignored, copy_function=_copy_regular_file)
        for path in left_out:
            (copy / path).unlink(missing_ok=True)
        return run_command(PYTEST, copy, timeout, OUTPUT_LIMIT)


def _copy_regular_file(source: str, destination: str) -> None:
    """Copy plain files only: a FIFO or a device the agent made would block or never end."""
    if stat.S_ISREG(os.lstat(source).st_mode):
        shutil.copy2(source, destination)


def unmet_conditions(start: Snapshot, now: Snapshot) -> list[str]:
    """strict's extra conditions that do not hold yet, as sentences for the model."""
    missing = []
    paths = set(start.files) | set(now.files)
    changed = [p for p in paths if not is_test_file(Path(p).name) and start.files.get(p) != now.files.get(p)]
    if not changed:
        missing.append(prompts.MISSING_CHANGE)
    if not now.tests - start.tests:
        missing.append(prompts.MISSING_TEST)
    return missing


def _summary(output: CommandOutput, timeout: float) -> str:
    if output.exit_code is None:
        return f"pytest timed out after {timeout:g} s"
    lines = [line.strip("= ").strip() for line in output.text.splitlines() if line.strip("= ").strip()]
    return lines[-1] if lines else ""
