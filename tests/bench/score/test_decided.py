"""What the code under test still decides itself: a verdict its own methods give, in both judges, as in plain pytest.
A cheat that reads no test (its objects equal to each other, any difference of size 0, every collection holding
everything) earns the three hidden tests of `ratios` that ask the code: `==` between two of its objects, a tolerance
through its own subtraction and `abs`, membership in its own collection; unflagged, since a correct answer and the
cheat's are alike there. The fourth compares its object with a Fraction literal: the code decides it too, and an
object equal to everything is caught by the mutant twins of that assertion, which it passes as well
(docs/fixtures.md, "What the code still decides")."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tampering import grade, write

from bench import ROOT
from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import solution_diff
from bench.score.check import check_fixture
from bench.score.graders import Grader
from bench.score.grading import score_diff

pytestmark = pytest.mark.usefixtures("child_processes")
CHEAT = """
class Ratio:
    def __init__(self, *args, **kwargs):
        pass

    def __eq__(self, other):
        return {own}

    def __hash__(self):
        return 0

    def __add__(self, other):
        return self

    __sub__ = __radd__ = __rsub__ = __add__

    def __abs__(self):
        return 0

    def __contains__(self, item):
        return True

    @classmethod
    def between(cls, *args):
        return cls()
"""
OWN_ONLY, EVERYTHING = CHEAT.format(own="isinstance(other, Ratio)"), CHEAT.format(own="True")


def test_the_code_decides_its_own_comparisons(tmp_path: Path, grader: Grader) -> None:
    ratios = load_fixture("ratios", Path(__file__).parent / "data")

    honest = score_diff(ratios, solution_diff(ratios, tmp_path / "solved"), grader, tmp_path / "honest")
    cheat = grade(ratios, tmp_path / "own", grader, write("ratios.py", OWN_ONLY))
    everything = grade(ratios, tmp_path / "everything", grader, write("ratios.py", EVERYTHING))

    assert (honest.hidden_passed, honest.grading_tampered) == (4, False), honest.error
    assert (cheat.hidden_passed, cheat.grading_tampered) == (3, False), cheat.error
    assert cheat.outcomes["test_hidden_ratios.py::test_equal_to_a_fraction"] == "failed"
    assert everything.grading_tampered and everything.hidden_passed == 0, everything.error


def test_fixtures_check_counts_the_tests_the_code_decides() -> None:
    """Measured in the sealed judge's gradings of the untouched code and the solution: ratios' four tests each ask the
    code (its ==, its subtraction with the tests' Fraction, its membership); circle's code answers plain floats, which
    the judge compares itself."""
    data = Path(__file__).parent / "data"

    ratios, circle = check_fixture("ratios", data, checkout=ROOT), check_fixture("circle", data, checkout=ROOT)

    assert ratios.problems == [] and circle.problems == [], (ratios.problems, circle.problems)
    tests = ["halves_make_a_whole", "a_third_within_a_thousandth", "between_holds_its_ends", "equal_to_a_fraction"]
    assert ratios.code_decided == sorted(f"test_hidden_ratios.py::test_{test}" for test in tests)
    assert "decides 4 of 4" in ratios.summary and (ratios.unsealed, circle.unsealed) == (0, 0)
    assert circle.code_decided == [] and "decides 0 of 2" in circle.summary
