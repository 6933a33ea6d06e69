"""`bench fixtures check` for one fixture: its layout, then its original and its reference solution graded the way
an agent's work is graded (bench.score.grading), against the counts fixture.yaml expects.

A sound fixture: the original passes every visible test and exactly `expected_hidden_passing` hidden tests; the
solution passes every test, adds tests of its own, and those pass too.
"""

from __future__ import annotations

import ast
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import FixtureError
from bench.fixtures.fixture import Fixture, fixture_files, fixtures_root, load_fixture
from bench.fixtures.window import Fit, task_fit
from bench.fixtures.workcopy import solution_diff
from bench.json_documents import SCHEMA_VERSION
from bench.score.canaries import candidates
from bench.score.graders import Grader, LocalGrader, choose_grader, run_pytest
from bench.score.grading import Score, is_test_file, score_diff
from bench.score.grading_copy import clean_grading_copy
from bench.score.sessions import BASE_ARGS


def layout_problems(fx: Fixture) -> list[str]:
    """What docs/fixtures.md forbids: hidden test names clashing with fixture or solution files, conftest.py."""
    problems = []
    names = {rel.name for rel in fixture_files(fx)}
    solution = {p.name for p in fx.solution_dir.rglob("*")} if fx.solution_dir.is_dir() else set()
    for test in fx.hidden_tests:
        if Path(test).name in names | solution:
            problems.append(f"hidden test {test} has the name of a fixture or solution file")
    if not fx.solution_dir.is_dir():
        problems.append(f"no reference solution in {fx.solution_dir}")
    if "conftest.py" in names | solution | {Path(rel).name for rel in fx.hidden_names}:
        problems.append("conftest.py is ignored when grading: put fixtures in the test files")
    for rel in fx.support_files:
        try:
            (fx.hidden_dir / rel).read_text()
        except UnicodeDecodeError:
            problems.append(f"support file {rel} is not UTF-8 text: grading writes support files as text")
    return problems


@dataclass
class Checked:
    """What `fixtures check` found of one fixture."""

    problems: list[str]  # empty when sound
    summary: str  # one line: what was measured
    code_decided: list[str] | None = None  # hidden tests whose verdict the code's own answer gave; None: not graded
    unsealed: int | None = None  # hidden tests graded by plain pytest alone; None: not graded


def check_fixture(
    name: str, root: Path, *, checkout: Path, window: int | None = None, tokenizer_url: str | None = None
) -> Checked:
    """Fixture `name`'s problems and a one-line account of what was measured; with `window`, whether the task fits
    it (bench.fixtures.window). `checkout`: this repository (check_grader)."""
    try:
        fx = load_fixture(name, root)
    except FixtureError as e:
        return Checked([str(e)], "fixture.yaml rejected")
    problems = layout_problems(fx)
    if problems:
        return Checked(problems, "layout")
    fit = task_fit(fx, window, tokenizer_url) if window else None
    if fit and not fit.fits:
        return Checked([str(fit.problem())], fit.note())
    grader = check_grader(fx, checkout)
    with tempfile.TemporaryDirectory(prefix=f"bench-check-{name}-") as tmp:
        original = score_diff(fx, "", grader, Path(tmp) / "original")
        solved = score_diff(fx, solution_diff(fx, Path(tmp) / "solution"), grader, Path(tmp) / "graded")
        problems += _solution_tests_problems(fx, Path(tmp) / "solution", grader)
    # A stub may lack the names its tests import (plain pytest collects nothing either): its counts say the rest.
    stub_error = original.error_but_collection()
    expected = (fx.expected_hidden_passing, fx.expected_visible_passing)
    problems = _score_problems("original", original, *expected, error=stub_error) + problems
    problems += _score_problems("solution", solved, fx.hidden_total, None, error=solved.error)
    if fx.visible_tests and not original.visible_total:
        problems.append(f"original: no test of the visible tests ran ({', '.join(fx.visible_tests)})")
    if fx.solution_adds_tests and not solved.tests_added:
        problems.append(
            "solution: adds no test of its own (the task asks for new tests; solution_adds_tests: false if not)"
        )
    return _measured(fx, problems, original, solved, fit=fit)


def _measured(fx: Fixture, problems: list[str], original: Score, solved: Score, fit: Fit | None) -> Checked:
    """The check's one-line account of what was measured: both gradings, the window's fit, what the tests decide."""
    summary = (
        f"original: hidden {original.hidden_passed}/{fx.hidden_total}, visible {original.visible_passed}/"
        f"{original.visible_total}; solution: hidden {solved.hidden_passed}/{fx.hidden_total}, visible "
        f"{solved.visible_passed}/{solved.visible_total}, {solved.tests_added} tests added"
    )
    if fit:
        summary += f"; {fit.note()}"
    untwinned = untwinned_tests(fx)
    if untwinned:
        summary += f"; no canary can twin {', '.join(untwinned)} (no top-level == assertion against a literal)"
    decided = sorted(set(original.code_decided) | set(solved.code_decided))
    unsealed = max(original.hidden_unsealed or 0, solved.hidden_unsealed or 0)
    summary += f"; {decided_note(decided, fx.hidden_total)}; {unsealed} graded by plain pytest alone"
    return Checked(problems, summary, code_decided=decided, unsealed=unsealed)


def check_grader(fx: Fixture, checkout: Path) -> Grader:
    """Python's fixtures are graded here; another language's toolchain is in its sandbox image (of `checkout`):
    graded in Docker where an engine answers."""
    return LocalGrader() if fx.language == "python" else choose_grader("auto", checkout)[0]


def decided_note(decided: list[str], total: int) -> str:
    """How many hidden tests the code decides itself (bench/score/proxies.py decides), and which."""
    named = f" ({', '.join(decided)})" if decided else ""
    return (
        f"the code's own ==, <, in, truth or arithmetic on the tests' values decides {len(decided)} of {total}{named}"
    )


def untwinned_tests(fx: Fixture) -> list[str]:
    """Hidden tests of a library-style fixture that no mutant canary can be made of (bench/score/canaries.py): a
    plugin that makes failing tests pass would meet no twin of theirs."""
    if fx.grading == "program" or fx.language != "python":
        return []  # their process runs none of the agent's code, or there are no canaries: nothing to twin
    found = []
    for rel in fx.hidden_tests:
        tree = ast.parse((fx.hidden_dir / rel).read_text())
        twinned = {c.function.name for c in candidates(tree)}
        tests = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        found += [f"{rel}::{name}" for name in tests if name not in twinned]
    return found


def _solution_tests_problems(fx: Fixture, solved_copy: Path, grader: Grader) -> list[str]:
    """The solution's own new tests must pass on the solution, graded the same way as everything else (Python's:
    another language's grading leaves a solution's new test files out, and counts them)."""
    if fx.language != "python":
        return []
    rel = [p.relative_to(fx.solution_dir).as_posix() for p in fx.solution_dir.rglob("*.py")]
    tests = [p for p in rel if is_test_file(p) and p not in fx.visible_tests]
    if not tests:
        return []
    clean_grading_copy(fx, solved_copy)
    run = run_pytest(grader, solved_copy, [*BASE_ARGS, "--rootdir=.", "-q", *tests], 300)
    if run.exit_code == 0:
        return []
    tail = run.output.strip().splitlines()[-1:] or ["no output"]
    return [f"solution: its own tests fail ({', '.join(tests)}): {tail[0]}"]


def _score_problems(
    label: str, score: Score, expected_hidden: int, expected_visible: int | None, *, error: str | None
) -> list[str]:
    """`error` and what differs from the expected counts; `expected_visible` None: every visible test passes."""
    problems = [f"{label}: {error}"] if error else []
    if score.visible_total is None or score.visible_passed is None:
        problems.append(f"{label}: the visible tests were not graded")
    elif expected_visible is None and score.visible_passed != score.visible_total:
        problems.append(f"{label}: {score.visible_passed} of {score.visible_total} visible tests pass, expected all")
    elif expected_visible is not None and score.visible_passed != expected_visible:
        problems.append(
            f"{label}: {score.visible_passed} of {score.visible_total} visible tests pass, expected {expected_visible}"
        )
    if score.hidden_passed != expected_hidden:
        problems.append(
            f"{label}: {score.hidden_passed} of {score.hidden_total} hidden tests pass, expected {expected_hidden}"
        )
    return problems


def smallest_window(config: BenchConfig, name: str) -> int:
    """The smallest window fixture `name` runs in under these settings (any of the matrix's, if it is not in it)."""
    windows = [ctx for fixture, _, ctx in config.matrix() if fixture == name]
    return min(windows or [ctx for _, _, ctx in config.matrix()])


def command(
    names: Sequence[str] = (), config: BenchConfig | None = None, as_json: bool = False, *, checkout: Path
) -> int:
    """`python -m bench fixtures check [names...] [--json]`: one line per fixture (or one JSON document,
    bench.json_documents.FIXTURES_CHECK); 0 only when every fixture is sound. `checkout`: this repository."""
    config = config or BenchConfig()
    root = fixtures_root(config.fixtures_root, checkout)
    folder = root / "fixtures"
    # Every folder, not only those with a fixture.yaml: a fixture that lost its yaml is broken, not absent.
    names = list(names) or sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not names:
        raise FixtureError(f"no fixtures found under {folder}")
    found = []
    for name in names:
        window = smallest_window(config, name)
        checked = check_fixture(name, root, checkout=checkout, window=window, tokenizer_url=config.flint_url)
        problems = checked.problems
        found.append(
            {
                "name": name,
                "ok": not problems,
                "problems": problems,
                "summary": checked.summary,
                "code_decided": checked.code_decided,
                "unsealed": checked.unsealed,
            }
        )
        if not as_json:
            print(f"{name}: {'FAILED: ' + '; '.join(problems) if problems else 'ok'} ({checked.summary})", flush=True)
    sound = all(fixture["ok"] for fixture in found)
    if as_json:
        head = {"command": "fixtures check", "schema_version": SCHEMA_VERSION, "root": str(root), "ok": sound}
        print(json.dumps({**head, "fixtures": found}, indent=2, ensure_ascii=False))
    return 0 if sound else 1
