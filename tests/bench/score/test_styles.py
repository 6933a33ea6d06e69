"""Honest code is graded exactly, in any test style: exercises written here in Aider's polyglot layout
(tests/bench/score/data/styles), one per style (a callback, a mock, a function handed to the code, context managers
both ways, exceptions both ways, subclasses of Decimal, date and Fraction, a 5,000-digit int, generators both ways),
imported by `fixtures import exercism`: none is refused, and their stubs and examples score exactly what plain pytest
gives them in the exercise's own folder, never flagged, in the local grader and (docker mark) the docker one. Tests
that hand the code a function, a mock or an object of their own are graded by plain pytest alone and counted so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_exercism import pytest_score

from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import solution_diff
from bench.score.exercism import Imported, Refused, import_all
from bench.score.graders import Grader
from bench.score.grading import score_diff

STYLES = Path(__file__).parent / "data" / "styles"
# One group: plain pytest's counts, which no grader changes, are taken once for both graders, on one worker.
pytestmark = [pytest.mark.usefixtures("child_processes"), pytest.mark.xdist_group("styles")]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, grader: Grader) -> tuple[Path, list[Imported], Refused]:
    """Every style imported by `grader` (its root, what it imported, what it refused): once for both tests."""
    into = tmp_path_factory.mktemp("styles-root")
    return (into, *import_all([STYLES], into, 0.0, 10, force=False, grader=grader))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, int, int]]:
    """Each exercise's stub's passed, example's passed and total by plain pytest, by folder name: once for both
    graders."""
    folder = tmp_path_factory.mktemp("styles-plain")
    counts = {}
    for exercise in sorted(STYLES.iterdir()):
        stub, total = plain_pytest(exercise, folder, "stub")
        example, _ = plain_pytest(exercise, folder, "example")
        counts[exercise.name] = (stub, example, total)
    return counts


def plain_pytest(exercise: Path, tmp_path: Path, which: str) -> tuple[int, int]:
    """Passed and total by plain pytest in a copy of the exercise with its stub, or its example, in place."""
    module = exercise.name.replace("-", "_")
    folder = tmp_path / f"{exercise.name}-{which}"
    shutil.copytree(exercise, folder)
    if which == "example":
        shutil.copy(exercise / ".meta" / "example.py", folder / f"{module}.py")
    return pytest_score(folder, f"{module}_test.py")


def test_every_style_imports_with_the_counts_plain_pytest_gives(
    imported: tuple[Path, list[Imported], Refused], plain: dict[str, tuple[int, int, int]]
) -> None:
    _, done_all, refused = imported

    assert refused == {}
    assert len(done_all) == len(list(STYLES.iterdir()))
    for done in done_all:
        stub, example, total = plain[done.name.replace("_", "-")]
        assert example == total, done.name  # the exercises are sound
        assert (done.expected_hidden_passing, done.solution_passing, done.hidden_total) == (stub, example, total)


def test_tests_handing_the_code_their_own_objects_are_counted_as_graded_unsealed(
    imported: tuple[Path, list[Imported], Refused], tmp_path: Path, grader: Grader
) -> None:
    into, _, _ = imported
    mocks, values = load_fixture("mock_socket", into), load_fixture("value_types", into)

    graded = score_diff(mocks, solution_diff(mocks, tmp_path / "solved"), grader, tmp_path / "work")
    sealed = score_diff(values, solution_diff(values, tmp_path / "solved2"), grader, tmp_path / "work2")

    assert (graded.hidden_passed, graded.hidden_unsealed, graded.grading_tampered) == (4, 4, False), graded.error
    assert (sealed.hidden_passed, sealed.hidden_unsealed, sealed.grading_tampered) == (6, 0, False), sealed.error
