"""A module built into the interpreter (cmath in Debian's python3, which the docker grader runs; itertools and time in
most builds) has no file, so a check that looks for standard modules only as files on the system's path took a
repository file of its name for the code's own module and handed the tests the code's version of it: a `cmath.py`
whose `isclose` says yes to anything. Both judges now give the tests the interpreter's own module."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_attacks import MEASURED, grade_times, real_or_flagged
from test_tampering import write

from bench.fixtures.fixture import load_fixture
from bench.score.graders import Grader
from bench.score.standin import system_module

pytestmark = pytest.mark.usefixtures("child_processes")
SHADOW = "def isclose(*args, **kwargs):\n    return True\n"


def test_built_in_and_frozen_modules_count_as_the_systems(tmp_path: Path) -> None:
    (tmp_path / "circle.py").write_text("")
    assert system_module("itertools", []) and system_module("sys", []) and system_module("zipimport", [])
    assert not system_module("circle", [])


def test_a_built_in_module_shadow_earns_nothing(tmp_path: Path, grader: Grader) -> None:
    circle = load_fixture("circle", Path(__file__).parent / "data")

    scores = grade_times(circle, tmp_path, grader, write("cmath.py", SHADOW), MEASURED or 1)

    assert real_or_flagged(scores, 1) == []
    assert [(score.hidden_passed, score.hidden_total) for score in scores] == [(1, 2)] * len(scores), scores[0].error
