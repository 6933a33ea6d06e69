"""The done check, run when Flint answers without a tool call.

Every preset requires pytest to pass on the repository. pytest is started in an isolated Python whose path is the
interpreter's own (agent/check_python.py), so that nothing in the repository can stand in for it (a `pytest.py` the
agent wrote is not imported in its place, also with a PYTHONPATH naming the repository) and no start-up hook the
model's code wrote runs in it, without bytecode or cache files, and
whatever the run started is killed when it ends (a background process a conftest.py started cannot change the
tests afterwards); before the check, the loop ends what the agent's commands left running (agent/reaper.py).

What the agent planted (test files, conftest.py and __init__.py files that did not exist at start) is reported.
part2, clearing and part3 run pytest in the repository as it is, as the article did, and trust what it says.
part3+, strict and late do not trust what was planted: pytest runs in throwaway copies with the start's
configuration and no plugins from outside (agent/isolated_pytest.py): once without the planted conftest.py files,
and, when anything was planted and the repository had tests at start, once more without any planted file, so that
the repository's own tests pass on their own and not only next to test code that patches what they test. Any file
pytest collects that the repository did not have at start (a doctest text file, a file its configuration names)
counts as planted: it is reported, and left out of that second run. Neither run may collect nothing or end before
pytest finishes, a file of the copy that changed while pytest ran fails the check, and so does a link out of it.

`strict` also requires that the code changed: a non-test file differs from the start (or is new, or is gone), a
Python file in its syntax tree (not only its comments or layout), and documentation (a README) does not count; and
that pytest collects a test from a test file that did not exist at start, with its code in that file (not imported
from an old test file); the model is told exactly what is missing.
"""

from __future__ import annotations

import ast
import hashlib
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent import prompts
from agent.check_copy import file_digest
from agent.check_python import NoCheckPython, check_environment, pytest_location
from agent.guards import planted
from agent.isolated_pytest import NO_TESTS_COLLECTED, IsolatedRun, collected_count, pytest_command, run_isolated
from agent.pytest_config import start_config
from agent.shell import CommandOutput, run_command
from agent.tools import OUTPUT_LIMIT, is_test_file, protected_paths, repo_files

MAX_PARSED_BYTES = 1_000_000  # a larger Python file is compared by its bytes
DOC_SUFFIXES = frozenset({".md", ".rst", ".txt", ".adoc"})
DOC_NAMES = frozenset({"README", "LICENSE", "LICENCE", "CHANGELOG", "CHANGES", "AUTHORS", "NOTICE"})


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, str]  # relative path -> sha256 of the content (read in pieces: a huge file costs no memory)
    config: dict[str, bytes] = field(default_factory=dict)  # pytest's configuration files at the root
    code: dict[str, str] = field(default_factory=dict)  # Python files -> sha256 of their syntax tree (strict)

    def test_files(self, *, conftests: bool = True) -> dict[str, str]:
        return {p: d for p, d in self.files.items() if is_test_file(Path(p).name) and (conftests or not _conftest(p))}

    def protected(self) -> dict[str, str]:
        """The tests and the files beside them that shape how they run (agent/tools.py protected_paths)."""
        kept = protected_paths(self.files)
        return {p: d for p, d in self.files.items() if p in kept}


@dataclass(frozen=True)
class DoneResult:
    passed: bool
    pytest_exit: int | None  # None: pytest timed out
    summary: str  # pytest's last line
    missing: list[str] = field(default_factory=list)
    planted: list[str] = field(default_factory=list)
    feedback: str | None = None  # what the model is told when not done
    new_tests: int | None = None  # strict: tests collected from test files that did not exist at start


def pytest_missing() -> str | None:
    """Why the done check cannot run here, or None: it runs pytest with this very interpreter, from its own path
    (agent/check_python.py)."""
    try:
        location = pytest_location()
    except NoCheckPython as e:
        return str(e)
    if location is None:
        return f"pytest is not installed for {sys.executable}: install it there (pip install pytest)"
    return None


def take_snapshot(root: Path) -> Snapshot:
    files = {path.relative_to(root).as_posix(): file_digest(path) for path in repo_files(root)}
    code = {p: _code_digest(root / p, digest) for p, digest in files.items() if p.endswith(".py")}
    return Snapshot(files, start_config(root), code)


def _code_digest(path: Path, digest: str) -> str:
    """What a Python file's code is, without its comments and layout: a digest of its syntax tree (of its bytes when
    it is too large or does not parse)."""
    try:
        if path.stat().st_size > MAX_PARSED_BYTES:
            return digest
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return digest
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def check_done(root: Path, start: Snapshot, *, strict: bool, trust_planted: bool, timeout: float) -> DoneResult:
    named = planted(root, start.files)  # test files, conftest.py and __init__.py files the agent created
    new_test_files = [p for p in named if is_test_file(Path(p).name) and not _conftest(p)]
    if trust_planted:
        return _trusting_check(
            root=root, start=start, made=named, new_test_files=new_test_files if strict else None, timeout=timeout
        )
    conftests = [p for p in named if _conftest(p)]
    protected = start.protected()
    counted = new_test_files if strict else None
    first = run_isolated(
        root=root,
        left_out=conftests,
        config=start.config,
        known=start.files,
        protected=protected,
        timeout=timeout,
        count_tests_in=counted,
    )
    made = named + [p for p in first.new_files if p not in named]
    missing = unmet_conditions(start, take_snapshot(root), first.new_tests, first.new_files) if strict else []

    def verdict(run: IsolatedRun, feedback: str | None) -> DoneResult:
        """Done when nothing is left to tell the model; the figures of `run`, the pytest run that decided it."""
        return DoneResult(
            passed=feedback is None,
            pytest_exit=run.output.exit_code,
            summary=_run_summary(run, timeout),
            missing=missing,
            planted=made,
            feedback=feedback,
            new_tests=first.new_tests,
        )

    if feedback := _feedback(first, timeout, prompts.tests_failed, conftests):
        return verdict(first, feedback)
    if made and start.test_files(conftests=False):  # the repository's own tests, without anything planted
        # Planted by name: left out. Any other new file pytest would collect stays (the tests may import it as
        # code, under --doctest-modules) but is not collected.
        own = run_isolated(
            root=root,
            left_out=named,
            config=start.config,
            known=start.files,
            protected=protected,
            timeout=timeout,
            drop_new=True,
        )
        made += [p for p in own.new_files if p not in made]
        if feedback := _feedback(own, timeout, prompts.own_tests_fail, []):
            return verdict(own, feedback)
    return verdict(first, prompts.not_done_yet(missing) if missing else None)


def _trusting_check(
    root: Path, start: Snapshot, made: list[str], new_test_files: list[str] | None, timeout: float
) -> DoneResult:
    """part2, clearing, part3: pytest in the repository as it is."""
    output = run_command(pytest_command(), root, timeout, OUTPUT_LIMIT, kill_leftovers=True, env=check_environment())
    summary = _summary(output, timeout)
    new_tests = None
    if new_test_files is not None:
        present = [f for f in new_test_files if (root / f).is_file()]
        command = pytest_command(f"--collect-only {shlex.join(present)}")
        counted = run_command(command, root, timeout, OUTPUT_LIMIT, env=check_environment()) if present else None
        new_tests = collected_count(counted) if counted else 0
    missing = unmet_conditions(start, take_snapshot(root), new_tests) if new_test_files is not None else []
    if output.exit_code != 0:
        text = output.text if output.exit_code is not None else summary
        return DoneResult(
            passed=False,
            pytest_exit=output.exit_code,
            summary=summary,
            missing=missing,
            planted=made,
            feedback=prompts.tests_failed(text),
            new_tests=new_tests,
        )
    if missing:
        return DoneResult(
            passed=False,
            pytest_exit=0,
            summary=summary,
            missing=missing,
            planted=made,
            feedback=prompts.not_done_yet(missing),
            new_tests=new_tests,
        )
    return DoneResult(
        passed=True, pytest_exit=0, summary=summary, missing=[], planted=made, feedback=None, new_tests=new_tests
    )


def check_command_done(root: Path, command: str, timeout: float) -> DoneResult:
    """The fixture's own test command (a language other than Python, --test-command): done when it exits 0. The
    planted-file rules are pytest's and are not applied: the bench's grading leaves planted tests out itself."""
    output = run_command(command, root, timeout, OUTPUT_LIMIT, kill_leftovers=True)
    lines = output.text.strip().splitlines()
    if output.exit_code is None:
        summary = f"{command} timed out after {timeout:g} s"
    else:
        summary = lines[-1][:200] if lines else f"{command} exited {output.exit_code}"
    if output.exit_code == 0:
        return DoneResult(passed=True, pytest_exit=0, summary=summary)
    text = output.text if output.exit_code is not None else summary
    return DoneResult(passed=False, pytest_exit=output.exit_code, summary=summary, feedback=prompts.tests_failed(text))


def _feedback(run: IsolatedRun, timeout: float, failed: Callable[[str], str], conftests: list[str]) -> str | None:
    """None when the run passed; otherwise what the model is told: `failed(pytest's output and notes)`, or that the
    tests changed while pytest ran, which makes the run prove nothing."""
    output = run.output
    if run.links_out:
        return prompts.links_out_of_repository(run.links_out)
    if run.changed:
        return prompts.changed_during_check(run.changed)
    if run.passed:
        return None
    text = output.text if output.exit_code is not None else _summary(output, timeout)
    if output.exit_code == NO_TESTS_COLLECTED:
        text += prompts.NO_TESTS_RAN
    if not run.finished:
        text += prompts.CHECK_ENDED_EARLY
    if conftests:
        text += prompts.planted_distrusted(conftests)
    return failed(text)


def unmet_conditions(start: Snapshot, now: Snapshot, new_tests: int | None, collected: Iterable[str] = ()) -> list[str]:
    """strict's extra conditions that do not hold yet, as sentences for the model; `collected`: new files pytest
    collects, which are tests whatever their name (a doctest text file is no change to the code)."""
    missing = []
    tests = set(collected)
    paths = (set(start.files) | set(now.files)) - tests
    changed = [p for p in paths if not is_test_file(Path(p).name) and _changes_code(p, start, now)]
    if not changed:
        missing.append(prompts.MISSING_CHANGE)
    if not new_tests:
        missing.append(prompts.MISSING_TEST)
    return missing


def _changes_code(path: str, start: Snapshot, now: Snapshot) -> bool:
    """A change strict counts: to a Python file's code (not its comments or layout), or to a file that is not
    documentation (a README's new line is no change to the code)."""
    name = PurePosixPath(path)
    if name.suffix.lower() in DOC_SUFFIXES or name.stem.upper() in DOC_NAMES:
        return False
    if path.endswith(".py"):
        return start.code.get(path) != now.code.get(path)
    return start.files.get(path) != now.files.get(path)


def _conftest(path: str) -> bool:
    return Path(path).name == "conftest.py"


def _run_summary(run: IsolatedRun, timeout: float) -> str:
    return "not run: links lead out of the repository" if run.links_out else _summary(run.output, timeout)


def _summary(output: CommandOutput, timeout: float) -> str:
    if output.exit_code is None:
        return f"pytest timed out after {timeout:g} s"
    lines = [line.strip("= ").strip() for line in output.text.splitlines() if line.strip("= ").strip()]
    return lines[-1] if lines else ""
