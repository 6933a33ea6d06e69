"""A grading output that says "No module named 'pytest'" is the grader's fault only when the grader, asked apart
from the repository, cannot import pytest: text an agent's code prints never makes a run infra_error."""

from __future__ import annotations

import pytest

from bench.run.grade import NO_PYTEST, lacks_pytest
from bench.score.graders import LocalGrader

pytestmark = pytest.mark.usefixtures("child_processes")  # the probe is a python of the grader's


def test_the_words_alone_do_not_make_it_the_graders_fault() -> None:
    printed = "E   ModuleNotFoundError: No module named 'pytest'; the tests it did not report count as failed"
    assert NO_PYTEST.search(printed)
    assert lacks_pytest(LocalGrader(), printed) is None  # this Python has pytest: the agent's code said it


def test_only_pytest_itself_matches() -> None:
    assert NO_PYTEST.search("ModuleNotFoundError: No module named pytest\n")
    for other in ("No module named 'pytest_mock'", "No module named pytest.__main__", "No module named 'pytestx'"):
        assert not NO_PYTEST.search(other), other
