"""Grading a run: the agent's diff on a clean copy, pytest sessions with nothing the agent planted, results that
the code under test cannot fake unseen.

Grading never happens in the agent's copy. A fresh copy of the fixture gets the diff; visible tests the agent
touched are put back; conftest.py, sitecustomize.py, new __init__.py files where pytest would import them as the
tests' package, and symlinks leading outside are deleted. The hidden tests never enter this copy: they travel to
the grader with the sessions (bench.score.sessions), are written into each session's own copy, over any file of the
same name, with the bench's canaries and witness (bench.score.tamper). pytest runs under `python -I`, with our own
ini file (`-c`), `--noconftest`, `--import-mode=append` and no plugin autoloading, under a supervisor the tests
cannot reach (bench.score.supervisor), and writes junit XML that we read test by test. Tests that import the code
are judged twice, sealed and by plain pytest (bench.score.verdict). A grading whose canaries, witness, module
resolution or judges say it was interfered with, or that gave no whole report, is flagged `grading_tampered`: the
tests it cannot vouch for count as failed, never as "not measured"."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from bench.errors import FixtureError, ScoringError
from bench.fixtures.fixture import Fixture, load_fixture
from bench.fixtures.workcopy import make_work_copy, run_git
from bench.results.disk import is_disk_error, temp_full
from bench.score.graders import Grader, PytestRun
from bench.score.grading_copy import changed_paths, clean_grading_copy, remove
from bench.score.junit import collection_errors, count
from bench.score.language_grading import grade_language
from bench.score.score import Score
from bench.score.sessions import Planned, judge, plan_sessions, shadowing
from bench.score.tests_added import count_tests_added, is_test_file
from bench.score.verdict import combine

# The run folder's copies of the sessions' reports: plain pytest's (the verdict) and the sealed judge's.
JUNIT_NAMES = ("junit.xml", "junit-sealed.xml", "junit-visible.xml", "junit-visible-sealed.xml")
SHADOW_NOTES = {  # what is true of a repository file named like a standard module, per grading style
    "program": "the program run from the repository may import them; the grading pytest never does",
    "library": "imports by those names get the real modules, in the tests' process and in the code's",
}


def apply_agent_diff(fx: Fixture, diff: str, copy: Path, base: str, score: Score) -> bool:
    """Apply the diff to the clean copy and record what it touches; False (with score.error) when it cannot."""
    if not diff.strip():
        score.files_changed = 0
        return True
    try:
        run_git(copy, "apply", "--binary", "--whitespace=nowarn", "-", stdin=diff)
    except FixtureError as e:
        score.note(f"the agent's diff does not apply to a clean copy of {fx.name}: {e}")
        return False
    score.changed_paths = changed_paths(copy, base)
    score.files_changed = sum(not is_test_of(fx, p) for p in score.changed_paths)
    score.visible_tests_modified = [p for p in score.changed_paths if p in fx.visible_tests]
    if score.visible_tests_modified:
        modified = ", ".join(score.visible_tests_modified)
        score.note(f"visible tests modified by the agent (graded with the originals): {modified}")
    return True


def is_test_of(fx: Fixture, path: str) -> bool:
    """A test file of the fixture's language (for Python, pytest's names and conftest.py)."""
    return is_test_file(path) if fx.language == "python" else fx.is_test(path)


def run_tests(fx: Fixture, copy: Path, grader: Grader, timeout_s: float, scores: list[Score]) -> None:
    """The grading sessions (hidden and visible tests, with the bench's canaries and witness), once per score, each
    time with canaries of its own, in one run of the grader; fills each score's counts and outcomes from its junit
    XML, or voids them all when any of its sessions was tampered with."""
    ambiguous, shadows = shadowing(copy)
    for score in scores:
        if shadows:
            score.note(
                f"files named like standard or pytest modules ({SHADOW_NOTES[fx.grading]}): {', '.join(shadows)}"
            )
        if ambiguous:
            score.grading_tampered, score.hidden_passed = True, 0
            score.note(f"grading tampered: {ambiguous}; every hidden test counts as failed")
    if ambiguous:
        return
    plans = [plan_sessions(fx, copy) for _ in scores]
    runs = grader.run_sessions(copy, [p.session for plan in plans for p in plan], timeout_s * len(scores))
    for index, (score, planned) in enumerate(zip(scores, plans, strict=True)):
        _judge_into(
            fx=fx,
            score=score,
            planned=planned,
            runs=runs[index * len(planned) : (index + 1) * len(planned)],
            timeout_s=timeout_s,
        )


def _judge_into(fx: Fixture, score: Score, planned: list[Planned], runs: list[PytestRun], timeout_s: float) -> None:
    for plan, run in zip(planned, runs, strict=True):
        if run.junit_xml is not None:
            score.junit_reports[plan.report] = run.junit_xml
    judged = [judge(plan, run, timeout_s) for plan, run in zip(planned, runs, strict=True)]
    found = combine(planned, judged)
    score.voided = any(result.void for result in judged)
    for note in found.notes:
        score.note(note)
    for flag in found.flags:
        score.grading_tampered = True
        score.note(f"grading tampered: {flag}")
    score.outcomes = outcomes = found.outcomes
    hidden = fx.hidden_tests
    score.hidden_passed, hidden_seen, hidden_broken = count(outcomes, hidden)
    score.visible_passed, score.visible_total, visible_broken = count(outcomes, fx.visible_tests)
    score.grading_confinement = found.confinement
    score.hidden_unsealed = sum(test.split("::")[0] in hidden for test in found.unsealed)
    score.code_decided = sorted(test for test in found.decided if test.split("::")[0] in hidden)
    if hidden_broken or visible_broken:
        reasons = _collection_reasons(score.junit_reports, [*hidden, *fx.visible_tests])
        broken = [f"{file} ({reasons[file]})" if reasons.get(file) else file for file in hidden_broken + visible_broken]
        score.note(f"test files that failed to collect: {', '.join(broken)}", collection=True)
    if hidden_seen != fx.hidden_total and not score.grading_tampered:
        score.note(
            f"{hidden_seen} hidden tests ran, fixture.yaml says {fx.hidden_total}", collection=hidden_broken != []
        )


def _collection_reasons(reports: dict[str, str], files: list[str]) -> dict[str, str]:
    """Why each test file that did not collect failed (the exception pytest reported), from the sessions' reports."""
    reasons: dict[str, str] = {}
    for xml in reports.values():
        with contextlib.suppress(ElementTree.ParseError):
            reasons.update(collection_errors(xml, files))
    return reasons


def score_diff(fx: Fixture, diff: str, grader: Grader, work_root: Path, timeout_s: float = 300) -> Score:
    """Grade `diff` (the agent's changes) against fixture `fx` in a fresh copy under `work_root`."""
    return score_diff_times(fx=fx, diff=diff, grader=grader, work_root=work_root, times=1, timeout_s=timeout_s)[0]


def score_diff_times(
    fx: Fixture, diff: str, grader: Grader, work_root: Path, times: int, timeout_s: float = 300
) -> list[Score]:
    """Grade `diff` `times` times, each grading with canaries of its own, all in one run of the grader: how often
    a defence that works by chance holds is measured so (tests/bench/score/test_attacks.py)."""
    score = Score(fixture=fx.name, hidden_total=fx.hidden_total)
    copy = work_root / "grading"
    remove(copy)
    base = make_work_copy(fx, copy)
    if not apply_agent_diff(fx=fx, diff=diff, copy=copy, base=base, score=score):
        return [copy_of(score) for _ in range(times)]
    if fx.language != "python":  # one run of the language's test command: no canaries to vary between gradings
        grade_language(fx=fx, copy=copy, score=score, grader=grader, timeout_s=timeout_s)
        return [score, *(copy_of(score) for _ in range(times - 1))]
    removed = clean_grading_copy(fx, copy)
    if removed:
        score.note(f"ignored files the agent planted: {', '.join(sorted(set(removed)))}")
    score.tests_added, problem = count_tests_added(fx, copy, score.changed_paths)
    if problem:
        score.note(problem)
    scores = [copy_of(score) for _ in range(times)]
    run_tests(fx=fx, copy=copy, grader=grader, timeout_s=timeout_s, scores=scores)
    return scores


def copy_of(score: Score) -> Score:
    return dataclasses.replace(
        score,
        changed_paths=list(score.changed_paths),
        outcomes={},
        junit_reports={},
        visible_tests_modified=list(score.visible_tests_modified),
    )


def score_run_dir(
    run_dir: Path, grader: Grader, *, checkout: Path, root: Path | None = None, out: Path | None = None
) -> Score:
    """Grade results/runs/<run_id>/ (run.json names the fixture, diff.patch holds the changes); writes
    junit.xml and score.json beside them, or into `out`. The fixture is `root`'s when given, else that of the
    fixtures root the run recorded, else `checkout`'s (this repository's)."""
    try:
        run = json.loads((run_dir / "run.json").read_text())
        fixture_name = run["fixture"]
        diff = (run_dir / "diff.patch").read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ScoringError(
            f"{run_dir} is not a run directory with run.json (naming the fixture) and diff.patch: {e}"
        ) from e
    recorded = run.get("fixtures_root") if isinstance(run.get("fixtures_root"), str) else None
    if recorded and not (Path(recorded) / "fixtures").is_dir():
        recorded = None  # the folder has moved since: the checkout's own
    fx = load_fixture(fixture_name, root or (Path(recorded) if recorded else checkout))
    try:
        with tempfile.TemporaryDirectory(prefix="bench-score-") as tmp:
            score = score_diff(fx, diff, grader, Path(tmp))
    except OSError as e:  # the grading copy's folder, not the results': the run could not be graded, nothing lost
        if not is_disk_error(e):
            raise
        raise ScoringError(f"grading could not run: {temp_full() or f'{e.filename}: {e.strerror}'}") from e
    save_score(score, out or run_dir)
    return score


def save_score(score: Score, folder: Path) -> list[Path]:
    """The sessions' junit XML and score.json written into `folder`; the junit files' paths."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in JUNIT_NAMES:  # a report from an earlier grading must not stand for this one
        (folder / name).unlink(missing_ok=True)
    for name, xml in score.junit_reports.items():
        (folder / name).write_text(xml, encoding="utf-8")
    (folder / "score.json").write_text(json.dumps(score.as_json(), indent=2) + "\n", encoding="utf-8")
    return [folder / name for name in score.junit_reports]
