"""The done check, run when Flint answers without a tool call.

Every preset requires `python -m pytest -q` to pass in the repository. `strict` also requires that a non-test file
differs from the start (or is new, or is gone) and that a test function exists that did not at start; the model is
told exactly what is missing. A snapshot taken at start is what "changed" and "new" are measured against.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from agent import prompts
from agent.tools import OUTPUT_LIMIT, is_test_file, repo_files, run_command, truncate_middle

TEST_FUNCTION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(", re.MULTILINE)


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


def check_done(root: Path, start: Snapshot, *, strict: bool, timeout: float) -> DoneResult:
    # No bytecode and no .pytest_cache: the done check should leave the repository as it found it.
    command = f"PYTHONDONTWRITEBYTECODE=1 {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"
    output, exit_code = run_command(command, root, timeout)
    summary = _last_line(output) if exit_code is not None else f"pytest timed out after {timeout:g} s"
    missing = unmet_conditions(start, take_snapshot(root)) if strict else []
    if exit_code != 0:
        shown, _ = truncate_middle(output if exit_code is not None else summary, OUTPUT_LIMIT)
        return DoneResult(False, exit_code, summary, missing, prompts.tests_failed(shown))
    if missing:
        return DoneResult(False, exit_code, summary, missing, prompts.not_done_yet(missing))
    return DoneResult(True, exit_code, summary)


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


def _last_line(output: str) -> str:
    lines = [line.strip("= ").strip() for line in output.splitlines() if line.strip("= ").strip()]
    return lines[-1] if lines else ""
