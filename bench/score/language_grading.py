"""Grading a fixture of another language than Python (bench/languages/): one run of the language's test command in
the grader, its machine-readable report read test by test.

The grading copy holds the agent's diff (bench/score/grading.py applied it). Here, before anything runs: links that
lead out of the copy are deleted, test files the agent planted (new files that match the fixture's test patterns)
are deleted and counted, the visible tests are put back, and only then are the hidden tests and their support files
written in, over whatever lies at their paths. A test is named `file::id` by the file that defines it. When the
tests do not build, every hidden test counts as failed and the compiler's first error is noted.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.fixtures.fixture import Fixture, fixture_files
from bench.languages.base import Language, TestReport
from bench.score.command_grader import CommandRun, command_grader
from bench.score.graders import Grader
from bench.score.grading_copy import remove
from bench.score.score import Score

REPORT_NAME = "test-report.txt"  # the runner's stdout and stderr, kept in the run folder as the junit XML is


def grade_language(fx: Fixture, copy: Path, score: Score, grader: Grader, timeout_s: float) -> None:
    lang = fx.lang
    score.tests_added = count_new_tests(fx, copy, score.changed_paths)
    removed = clean_copy(fx, copy)
    if removed:
        score.note(f"ignored files the agent planted: {', '.join(removed)}")
    run = command_grader(grader).run(lang, copy, timeout_s)
    kept = f"{run.stdout}\n--- stderr ---\n{run.stderr}"
    score.junit_reports[REPORT_NAME] = kept if run.report_file is None else f"{kept}\n--- report ---\n{run.report}"
    sources = {rel: (copy / rel).read_text(errors="replace") for rel in [*fx.hidden_tests, *fx.visible_tests]}
    report = _report(lang, run)
    distrusted = _distrusted(report, run)
    score.outcomes = {}
    unowned = []
    for test, outcome in report.outcomes.items():
        file = _file_of(lang, test, sources)
        if file is None:
            unowned.append(test)
        else:
            score.outcomes[test if test.startswith(f"{file}::") else f"{file}::{test}"] = outcome
    score.hidden_passed, hidden_seen = _count(score.outcomes, fx.hidden_tests)
    score.visible_passed, score.visible_total = _count(score.outcomes, fx.visible_tests)
    if run.problem:
        score.note(run.problem)
    if run.timed_out:
        score.note(f"the tests ran past {timeout_s:.0f} s and were stopped")
    if distrusted:
        score.note(distrusted)
    if report.build_error:
        score.note(f"the tests do not compile, every one counts as failed: {report.build_error}")
    elif hidden_seen != fx.hidden_total and not run.problem:
        score.note(f"{hidden_seen} hidden tests ran, fixture.yaml says {fx.hidden_total}")
    if unowned:
        score.note(f"tests of no hidden or visible file, not counted: {', '.join(sorted(unowned)[:5])}")


def _report(lang: Language, run: CommandRun) -> TestReport:
    if run.problem or lang.read_report is None:
        return TestReport()
    return lang.read_report(run.report, run.stderr)


def _distrusted(report: TestReport, run: CommandRun) -> str | None:
    """Why the report is not taken as it reads, its tests then counted failed: a test reported both passed and
    failed, or a run that failed (its runner exits non-zero when a test fails) with no failed test in its report.
    Either means that the tested code wrote a report of its own (docs/fixtures.md)."""
    why = None
    if report.conflicting:
        why = f"tests reported both passed and failed, counted failed: {', '.join(report.conflicting[:3])}"
    failed = any(outcome == "failed" for outcome in report.outcomes.values())
    if run.exit_code not in (0, None) and report.outcomes and not failed and not run.timed_out:
        why = f"the test run failed (exit {run.exit_code}) but its report names no failed test: all count as failed"
        report.outcomes = dict.fromkeys(report.outcomes, "failed")
    return why


def _count(outcomes: dict[str, str], files: list[str]) -> tuple[int, int]:
    mine = [outcome for test, outcome in outcomes.items() if test.split("::")[0] in files]
    return sum(outcome == "passed" for outcome in mine), len(mine)


def _file_of(lang: Language, test: str, sources: dict[str, str]) -> str | None:
    """The test file that defines `test`: the language's own rule, else the file defining its top-level name."""
    if lang.file_of is not None:
        return lang.file_of(test, list(sources))
    names = lang.test_names or (lambda _: [])
    for rel, text in sources.items():
        if any(test == name or test.startswith((f"{name}/", f"{name}::")) for name in names(text)):
            return rel
    return None


def count_new_tests(fx: Fixture, copy: Path, changed: list[str]) -> int:
    """Test functions in the agent's new or changed test files that no test file of the fixture had (by name)."""
    names = fx.lang.test_names
    if names is None:
        return 0
    given = {rel.as_posix() for rel in fixture_files(fx)}
    known = {n for rel in given if fx.is_test(rel) for n in names((fx.path / rel).read_text(errors="replace"))}
    added: set[str] = set()
    for rel in changed:
        path = copy / rel
        if fx.is_test(rel) and path.is_file() and not path.is_symlink():
            added.update(n for n in names(path.read_text(errors="replace")) if n not in known)
    return len(added)


def clean_copy(fx: Fixture, copy: Path) -> list[str]:
    """Links out and planted test files deleted, visible tests put back, hidden tests and support files written;
    returns what was deleted."""
    given = {rel.as_posix() for rel in fixture_files(fx)}
    removed = []
    for folder, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if not (folder == str(copy) and d == ".git")]
        for name in [*files, *dirs]:
            path = Path(folder) / name
            rel = path.relative_to(copy).as_posix()
            planted = path.is_file() and fx.is_test(rel) and rel not in given
            if _leads_out(path, copy) or planted:
                removed.append(rel)
                remove(path)
    for rel in fx.visible_tests:
        _put((fx.path / rel).read_bytes(), copy / rel)
    for rel in fx.hidden_names:
        _put((fx.hidden_dir / rel).read_bytes(), copy / rel)
    return sorted(removed)


def _leads_out(path: Path, root: Path) -> bool:
    if not path.is_symlink():
        return False
    try:
        return not path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return True


def _put(data: bytes, dest: Path) -> None:
    remove(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
