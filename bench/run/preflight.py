"""Matrices that could measure nothing, refused before their first run, with what to do instead.

- A window smaller than a task's first request (system prompt, tools, task text) and an answer: every run would stop
  at step 0 with context_exhausted. Counted by Flint's own tokenizer at its first start (bench.fixtures.window); an
  estimate, where the server cannot count, only warns.
- Hidden tests that do not collect on the reference solution: every run would score 0 whatever the agent did. Their
  collection is asked of the bench's own grader, on a copy of the solution with the hidden tests laid in; a grader
  that has no pytest is named as such (PrerequisiteError), not the fixture.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tempfile
from pathlib import Path

from bench.errors import ConfigError, FixtureError, PrerequisiteError
from bench.fixtures.fixture import Fixture
from bench.fixtures.window import task_fit
from bench.fixtures.workcopy import solution_diff
from bench.run.grade import lacks_pytest
from bench.run.plan import PlannedRun
from bench.score.graders import Grader, run_pytest
from bench.score.grading_copy import clean_grading_copy
from bench.score.sessions import BASE_ARGS

COLLECT_TIMEOUT_S = 120.0
NO_TESTS = 5  # pytest's exit status when it collected nothing
EXCEPTION = re.compile(r"E +\w+(Error|Exception|Exit)\b")
log = logging.getLogger(__name__)
COLLECTED: dict[tuple[str, str, str], str | None] = {}  # (the fixture's files' hash, grader kind, image) -> problem


def smallest_windows(plan: list[PlannedRun]) -> dict[str, tuple[Fixture, int]]:
    """Each fixture the article's agent runs, with the smallest window it runs in (its first request is the
    article's; other agents' prompts are their own)."""
    smallest: dict[str, tuple[Fixture, int]] = {}
    for run in plan:
        if run.agent == "article" and run.ctx < smallest.get(run.fixture.name, (run.fixture, run.ctx + 1))[1]:
            smallest[run.fixture.name] = (run.fixture, run.ctx)
    return smallest


def refuse_small_windows(plan: list[PlannedRun], flint_url: str) -> None:
    """ConfigError naming the window that fits, when a task's first request, counted by Flint, leaves no room for
    an answer in its smallest window; an estimate that says so is logged."""
    for name, (fixture, window) in smallest_windows(plan).items():
        fit = task_fit(fixture, window, flint_url)
        if fit.fits:
            continue
        if fit.how.startswith("measured"):
            raise ConfigError(f"fixture {name}: {fit.problem()}; nothing was run")
        log.warning("fixture %s may not fit: %s", name, fit.problem())


def hidden_tests_problem(fixture: Fixture, grader: Grader) -> str | None:
    """Why `fixture`'s hidden tests do not collect on its reference solution, or None when they do (or when the
    grader could not say: the runs' grading will). Asked once per process for the same files, grader kind and image."""
    if not fixture.solution_dir.is_dir():
        return None  # no solution to collect them on: `bench fixtures check` says so
    if fixture.language != "python":
        return None  # pytest collects Python only; another language's grading names a build error itself
    files = hashlib.sha256()
    for folder in (fixture.path, fixture.hidden_dir):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            files.update(f"{path}\0".encode() + path.read_bytes())
    key = (files.hexdigest(), type(grader).__name__, getattr(grader, "image", ""))  # two images can differ
    if key not in COLLECTED:
        COLLECTED[key] = _collection_problem(fixture, grader)
    return COLLECTED[key]


def _collection_problem(fixture: Fixture, grader: Grader) -> str | None:
    with tempfile.TemporaryDirectory(prefix=f"bench-collect-{fixture.name}-") as tmp:
        copy = Path(tmp) / fixture.name
        solution_diff(fixture, copy)
        clean_grading_copy(fixture, copy)
        for rel in fixture.hidden_names:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixture.hidden_dir / rel, copy / rel)
        args = [*BASE_ARGS, "--rootdir=.", "--collect-only", "-q", *fixture.hidden_tests]
        run = run_pytest(grader, copy, args, COLLECT_TIMEOUT_S)
    if run.exit_code == 0 or run.exit_code is None or run.timed_out:
        return None
    if missing := lacks_pytest(grader, run.output):  # the grader's, not the fixture's: no run could be graded
        raise PrerequisiteError(f"{missing}; nothing was run")
    lines = run.output.splitlines()
    files = [line.split()[1] for line in lines if line.startswith("ERROR ") and len(line.split()) > 1]
    errors = [line[1:].strip() for line in lines if EXCEPTION.match(line)]  # pytest's "E   NameError: ..." lines
    why = f"{', '.join(dict.fromkeys(files))}: {'; '.join(dict.fromkeys(errors))}" if files and errors else ""
    why = why or (run.output.strip().splitlines() or ["no output"])[-1]
    if run.exit_code == NO_TESTS:
        why = f"no test collected ({why})"
    return f"the hidden tests of fixture {fixture.name} do not collect on its reference solution: {why}"


def refuse_uncollectable(plan: list[PlannedRun], grader: Grader) -> None:
    """FixtureError when a fixture's hidden tests would score every run 0 because they do not collect."""
    fixtures = {run.fixture.name: run.fixture for run in plan}
    problems = {name: problem for name, fx in fixtures.items() if (problem := hidden_tests_problem(fx, grader))}
    if problems:
        check = f"bench fixtures check {' '.join(problems)}"
        raise FixtureError(f"{'; '.join(problems.values())}; every run would score 0: fix them ({check})")
