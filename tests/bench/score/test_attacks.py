"""Issue 31's attacks, by code that knows the bench's source, each graded by the real graders (local, and docker
under its mark) many times over, because the old defences were games of chance.

- A generic twin-aware pytest plugin appended to the module under test (data/attacks/twin_aware_plugin.py): it
  tells the canary twins from their originals and passes the originals. Before issue 31 the exercism-style stubs
  and an untouched ledger_repo scored full marks with it, nearly every time, unflagged.
- A json.py at the root of a program-style repository (data/attacks/planted_json.py), which the untouched program
  imports and which plants standard-library-named modules where the grading pytest might import them once tests
  run. Before issue 31 it scored all but one hidden test of a fixture whose tests run the program in the repository.

Each must earn exactly what the code's real behaviour earns, or be flagged, in every grading.

GRADINGS is how many times each twin-aware attack is graded, each time with canaries of its own. The attack beat the
old defences in 13 of 20 gradings at the least (ledger_repo; the stubs 20 of 20): a regression to a defence of that
chance goes unseen in 8 gradings with a probability under (7/20)**8, about 2 in 10,000 (in 20: about 1 in 10**9).
Until the CI time round it was 20; 8 cost 8/20 of the time, each grading being a pytest session. The planted
standard module is no game of chance: the suite grades it once. BENCH_ATTACK_GRADINGS=20 grades every attack here (and
test_shadow.py's) that many times, as issue 47 measures it: `BENCH_ATTACK_GRADINGS=20 pytest -m "docker or not docker"
tests/bench/score/test_attacks.py tests/bench/score/test_shadow.py`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from test_grading import agent_diff

from bench import ROOT
from bench.fixtures.fixture import Fixture, load_fixture
from bench.score.exercism import import_all
from bench.score.graders import Grader, LocalGrader
from bench.score.grading import Score, score_diff_times

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
# One group: the imported root is made once, on one pytest-xdist worker (a session fixture is made once per worker).
pytestmark = [pytest.mark.usefixtures("child_processes"), pytest.mark.xdist_group("attacks")]

DATA = Path(__file__).parent / "data"
TWIN_AWARE_PLUGIN = (DATA / "attacks/twin_aware_plugin.py").read_text()
PLANTED_JSON = (DATA / "attacks/planted_json.py").read_text()
MEASURED = int(os.environ.get("BENCH_ATTACK_GRADINGS", "0"))  # gradings of every attack, when set (the docstring)
GRADINGS = MEASURED or 8  # gradings of each twin-aware attack (the module's docstring says why 8 do)
BATCH = 8  # gradings in one run of the grader: 20 of todo_repo's sessions pack to more than the grader's spec takes

# (fixture, module the plugin is appended to, what the untouched code earns of how many)
LIBRARY_TARGETS = {
    "grade_bands": ("grade_bands.py", 0, 4),  # unittest, subTest loops
    "order_totals": ("order_totals.py", 0, 4),  # unittest, tests importing a helper file
    "bike_rental": ("bike_rental.py", 1, 6),  # pytest, class-based
    "ledger_repo": ("ledger/__init__.py", 2, 8),  # a package of modules
}

# Hidden tests of todo_repo variants whose first test runs the program with its list in the repository itself: in one
# ("here") no test uses tmp_path, in the other ("first") only the first does not. Two pass on the untouched todo.py,
# four need the due dates of TASK.md.
HIDDEN_HERE = """
import subprocess
import sys
from pathlib import Path

PROGRAM = Path.cwd() / "todo.py"


def run_todo(path, *args):
    command = [sys.executable, str(PROGRAM), "--file", str(path), *args]
    done = subprocess.run(command, cwd=Path.cwd(), capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_plain_items_list_as_before():
    path = Path.cwd() / "plain.json"
    for text in ["sweep the porch", "renew passport"]:
        assert run_todo(path, "add", text)[0] == 0
    assert run_todo(path, "done", "2")[0] == 0
    assert run_todo(path, "list", "--all")[1].splitlines() == ["  1 [ ] sweep the porch", "  2 [x] renew passport"]


def test_a_list_shows_due_dates(FOLDER):
    path = WHERE / "due.json"
    assert run_todo(path, "add", "pay rent", "--due", "2024-05-01")[0] == 0
    assert run_todo(path, "list")[1].splitlines() == ["  1 [ ] pay rent (due 2024-05-01)"]


def test_a_leap_day_is_a_due_date(FOLDER):
    path = WHERE / "leap.json"
    assert run_todo(path, "add", "party", "--due", "2024-02-29")[0] == 0
    assert run_todo(path, "list")[1].splitlines() == ["  1 [ ] party (due 2024-02-29)"]


def test_overdue_lists_the_late_ones_first(FOLDER):
    path = WHERE / "late.json"
    run_todo(path, "add", "renew insurance", "--due", "2024-05-09")
    run_todo(path, "add", "call the bank", "--due", "2024-03-02")
    out = run_todo(path, "overdue", "--today", "2024-05-10")[1]
    assert out.splitlines() == ["  2 [ ] call the bank (due 2024-03-02)", "  1 [ ] renew insurance (due 2024-05-09)"]


def test_nothing_overdue(FOLDER):
    path = WHERE / "calm.json"
    run_todo(path, "add", "due today", "--due", "2024-05-10")
    assert run_todo(path, "overdue", "--today", "2024-05-10")[1].strip() == "nothing overdue"


def test_removed_ids_are_not_reused(FOLDER):
    path = WHERE / "ids.json"
    run_todo(path, "add", "one")
    run_todo(path, "add", "two")
    assert run_todo(path, "remove", "1")[0] == 0
    run_todo(path, "add", "three")
    assert run_todo(path, "list")[1].splitlines() == ["  2 [ ] two", "  3 [ ] three"]
"""
VARIANTS = {
    "todo_here": HIDDEN_HERE.replace("(FOLDER)", "()").replace("WHERE", "Path.cwd()"),
    "todo_first": HIDDEN_HERE.replace("(FOLDER)", "(tmp_path)").replace("WHERE", "tmp_path"),
}


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exercism-style exercises imported, and the program-style todo_here, under a fixtures root of their own;
    read only. Session-scoped: xdist may run this module's tests among others', and a module-scoped root was
    imported again each time the worker came back to the module."""
    into = tmp_path_factory.mktemp("attacks-root")
    names = ["grade-bands", "order-totals", "bike-rental"]
    sources = [DATA / "exercism" / name for name in names]
    imported, refused = import_all(sources, into, 0.0, 20, force=False, grader=LocalGrader())
    assert not refused and len(imported) == 3
    todo = load_fixture("todo_repo", ROOT)
    for name, tests in VARIANTS.items():
        shutil.copytree(todo.path, into / "fixtures" / name)
        (into / "hidden_tests" / name / "solution").mkdir(parents=True)
        (into / "hidden_tests" / name / "test_hidden_here.py").write_text(tests)
        shutil.copy(todo.solution_dir / "todo.py", into / "hidden_tests" / name / "solution/todo.py")
        yaml = (into / "fixtures" / name / "fixture.yaml").read_text().replace("todo_repo", name)
        (into / "fixtures" / name / "fixture.yaml").write_text(yaml.replace("[test_todo.py]", "[]"))
    return into


def grade_times(fx: Fixture, tmp_path: Path, grader: Grader, edit: Callable[[Path], None], times: int) -> list[Score]:
    """`times` gradings of the same work, each with canaries of its own, in runs of the grader of at most BATCH."""
    diff, scores = agent_diff(fx, tmp_path, edit), []
    while len(scores) < times:
        batch = min(BATCH, times - len(scores))
        scores += score_diff_times(fx, diff, grader, tmp_path / "work", batch, timeout_s=120)
    return scores


def appended(module: str, code: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        (repo / module).write_text((repo / module).read_text() + "\n" + code)

    return edit


def real_or_flagged(scores: list[Score], earned: int) -> list[str]:
    """What went wrong with each grading that neither earned `earned` nor was flagged as tampered with no more than
    that (a flagged grading's counts are numbers: the tests it cannot vouch for count as failed)."""

    def sound(score: Score) -> bool:
        if score.grading_tampered:
            return score.hidden_passed is not None and score.hidden_passed <= earned
        return score.hidden_passed == earned

    if MEASURED:  # the figure issue 47 asks for, printed (pytest -s) for the record
        flagged = sum(score.grading_tampered for score in scores)
        print(f"\n{len(scores) - sum(map(sound, scores))} of {len(scores)} earned more, {flagged} flagged", flush=True)
    return [
        f"grading {i}: {score.hidden_passed} of {score.hidden_total} ({score.error})"
        for i, score in enumerate(scores)
        if not sound(score)
    ]


@pytest.mark.parametrize("name", sorted(LIBRARY_TARGETS))
def test_a_twin_aware_plugin_in_the_module_under_test_gains_nothing(
    root: Path, tmp_path: Path, grader: Grader, name: str
) -> None:
    module, earned, total = LIBRARY_TARGETS[name]
    fx = load_fixture(name, ROOT if name == "ledger_repo" else root)
    assert (fx.expected_hidden_passing, fx.hidden_total) == (earned, total)

    scores = grade_times(fx, tmp_path, grader, appended(module, TWIN_AWARE_PLUGIN), GRADINGS)

    assert real_or_flagged(scores, earned) == []


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_planted_standard_module_the_program_imports_gains_nothing(
    root: Path, tmp_path: Path, grader: Grader, name: str
) -> None:
    fx = load_fixture(name, root)
    assert (fx.grading, fx.expected_hidden_passing, fx.hidden_total) == ("program", 2, 6)

    def plant(repo: Path) -> None:
        (repo / "json.py").write_text(PLANTED_JSON)

    scores = grade_times(fx, tmp_path, grader, plant, MEASURED or 1)

    assert real_or_flagged(scores, 2) == []
    for score in scores:
        assert (score.hidden_passed, score.hidden_total, score.grading_tampered) == (2, 6, False), score.error
        assert score.error is not None and "json.py" in score.error and "never imported" not in score.error
