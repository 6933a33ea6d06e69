"""A grade cannot be voided: each way the code under test can leave a grading session without a whole report (its
judge killed, no junit XML once the tests started, a folder at the junit path, a message too large to read back, a
hang past the grading's limit) gives failed tests and the `grading_tampered` flag, with the reason in `error`; never
an empty count that comparisons would drop as "not measured".

Each route runs on todo_repo (program-style: the code is the program its hidden tests run, and the module its
visible tests import) and on the suite's small task, calc (library-style), in the local grader and, under the docker
mark, the docker one (tests/bench/score/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tampering import CALC_ORIGINAL, TODO_ORIGINAL, before_main_of_todo, grade, prepend_to

from bench.fixtures.fixture import Fixture
from bench.score.graders import Grader

pytestmark = pytest.mark.usefixtures("child_processes")

# Each runs where the code runs: as the program (todo_repo's hidden tests), in plain pytest's process (the open
# session imports the module), or in the sealed judge's code process (which Landlock keeps from the judge).
KILL_THE_JUDGE = """
import os as _os, signal as _signal, sys as _sys
try:
    _os.kill(_os.getpid() if "pytest" in _sys.modules else _os.getppid(), _signal.SIGKILL)
except OSError:
    pass
"""
EXIT_WITHOUT_REPORT = """
import os as _os, sys as _sys
if "pytest" in _sys.modules:
    _os._exit(0)
try:
    _os.kill(_os.getppid(), 15)
except OSError:
    pass
"""
FOLDER_AT_THE_JUNIT_PATH = """
import os as _os
try:
    _os.makedirs(_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "reports", "junit.xml"))
except OSError:
    pass
"""
OVERSIZED_MESSAGE = """
raise RuntimeError("x" * (9 << 20))
"""
HANG = """
import time as _time
_time.sleep(600)
"""
ROUTES = {
    "kill": (KILL_THE_JUDGE, "wrote no junit XML"),
    "exit": (EXIT_WITHOUT_REPORT, "wrote no junit XML"),
    "folder": (FOLDER_AT_THE_JUNIT_PATH, "not a file"),
    "oversized": (OVERSIZED_MESSAGE, "bytes"),
    "hang": (HANG, "timed out"),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("fixture", ["todo", "calc"])
def test_a_route_out_of_the_report_fails_the_tests_and_is_flagged(
    todo: Fixture, calc: Fixture, tmp_path: Path, grader: Grader, route: str, fixture: str
) -> None:
    code, reason = ROUTES[route]
    fx, original = (todo, TODO_ORIGINAL) if fixture == "todo" else (calc, CALC_ORIGINAL)
    edit = before_main_of_todo(code) if fixture == "todo" else prepend_to("calc.py", code)

    # the hang begins as the code is imported, seconds into the grading; a longer limit only waits longer for it
    score = grade(fx, tmp_path, grader, edit, timeout_s=10 if route == "hang" else 180)

    assert score.grading_tampered, score.error
    assert score.hidden_passed is not None and score.hidden_passed <= original[0], score.error
    assert score.error is not None and reason in score.error, score.error
