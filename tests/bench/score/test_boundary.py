"""Library-style tests judged across a process boundary (bench/score/standin.py), through the real graders: what
crosses and how, what the sealed judge cannot take (plain pytest alone grades it, and it is counted), and what the
code under test's process cannot reach.

Each case is a small fixture written here under a fixtures root of the test's own; its hidden tests state what a
test may expect of the code it imports, and the grading must count each as the code's behaviour earns.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from bench.fixtures.fixture import Fixture, load_fixture
from bench.score.graders import Grader
from bench.score.grading import Score, score_diff
from bench.score.junit import parse_junit
from bench.score.landlock import abi_version

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

SHAPES = '''
"""A small library with the kinds of things tests meet: classes, exceptions, generators, output, files."""
import os
from collections import namedtuple
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum

Point = namedtuple("Point", "x y")
UNIT = Decimal("0.01")
COUNTER = [0]


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


class ShapeError(ValueError):
    def __init__(self, name, size):
        super().__init__(f"{name} cannot be {size} wide")
        self.size = size


@dataclass
class Square:
    side: Decimal

    def area(self):
        return self.side * self.side

    def grown(self, by):
        return Square(self.side + by)

    def __iter__(self):
        yield from (self.side,) * 4


def square(side):
    if side <= 0:
        raise ShapeError("a square", side)
    return Square(Decimal(side))


def corners(n):
    for i in range(n):
        yield Point(i, -i)


def shout(text):
    print(text.upper())
    return len(text)


def home():
    return os.environ.get("SHAPES_HOME"), os.getcwd()


def save(path, text):
    with open(path, "w") as f:
        f.write(text)
    return os.path.getsize(path)


def bump():
    COUNTER[0] += 1
    return COUNTER[0]


class Everything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def anything():
    return Everything()


class Sly(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def sly():
    return Sly("plain")


class Aimed(str):
    def __eq__(self, other):
        return other == "the one answer"

    __hash__ = str.__hash__


def aimed():
    return Aimed("plain")


def apply(function, value):
    return function(value)
'''

VALUES = """
import os
from datetime import date
from decimal import Decimal

import pytest

import shapes
from shapes import Colour, Point, ShapeError, Square, corners, home, save, shout, square


def test_plain_values_cross_as_copies():
    assert square(3).area() == Decimal(9)
    assert square(2).grown(Decimal("0.5")).side == Decimal("2.5")
    assert shapes.UNIT == Decimal("0.01")


def test_objects_compare_by_their_own_eq_with_objects_of_theirs():
    assert square(2) == Square(Decimal(2))
    assert square(2) != square(3)
    assert [square(1), square(2)] == [Square(Decimal(1)), Square(Decimal(2))]


def test_identity_and_classes_hold():
    made = square(4)
    assert isinstance(made, Square)
    assert Colour("red") is Colour.RED
    assert type(made).__name__ == "Square"


def test_builtin_subclasses_compare_by_their_value():
    assert Point(1, 2) == (1, 2)
    assert Colour.BLUE == "blue"
    assert list(corners(2)) == [(0, 0), (1, -1)]


def test_exceptions_cross_with_their_class_message_and_attributes():
    with pytest.raises(ShapeError, match="a square cannot be 0 wide") as caught:
        square(0)
    assert isinstance(caught.value, ValueError) and caught.value.size == 0
    with pytest.raises(TypeError):
        square("wide")


def test_iteration_and_containers():
    assert list(square(2)) == [2, 2, 2, 2]
    assert len(list(corners(3))) == 3


def test_printed_output_reaches_capsys(capsys):
    assert shout("hey") == 3
    assert capsys.readouterr().out == "HEY\\n"


def test_environment_and_current_folder_reach_the_code(monkeypatch, tmp_path):
    monkeypatch.setenv("SHAPES_HOME", "over there")
    monkeypatch.chdir(tmp_path)
    assert home() == ("over there", str(tmp_path))


def test_files_under_tmp_path_are_shared(tmp_path):
    assert save(tmp_path / "note.txt", "four") == 4
    assert (tmp_path / "note.txt").read_text() == "four"


def test_module_state_persists_and_plain_attributes_can_be_set(monkeypatch):
    first = shapes.bump()
    assert shapes.bump() == first + 1
    monkeypatch.setattr(shapes, "UNIT", Decimal("0.5"))
    assert shapes.UNIT == Decimal("0.5")


def test_a_date_crosses():
    assert shapes.Decimal("1.5") == Decimal("1.5")
    assert date(2024, 2, 29).isoformat() == "2024-02-29"
"""

REFUSED = """
import shapes


def test_a_function_of_the_tests_cannot_cross():
    assert shapes.apply(lambda value: value * 2, 3) == 6
"""

EVERYTHING = """
import shapes


def test_an_object_equal_to_everything_is_caught_by_its_twins():
    assert shapes.anything() == "whatever the test expects"


def test_a_str_subclass_is_compared_by_its_value():
    assert shapes.sly() == "not what it holds"
"""

AIMED = """
import shapes


def test_an_object_equal_to_the_expected_answer_alone():
    assert shapes.aimed() == "the one answer"
"""

SUBCLASSING = """
from shapes import Square


class Bigger(Square):
    pass


def test_never_collected():
    assert Bigger
"""

# The code under test tries every way out it has: the judge's folders (named on its command line), its memory and
# descriptors, signals, the network; each answer says what it managed.
PROBE = """
import ctypes
import os
import socket
import signal


def _try(action):
    try:
        action()
    except OSError:
        return False
    return True


def _open_any(folder):
    try:
        names = os.listdir(folder)  # root may list a non-dumpable process's descriptors: opening one is the breach
    except OSError:
        return False
    return any(_try(lambda: open(os.path.join(folder, name), "rb").close()) for name in names)


def escapes():
    judge = os.getppid()
    arguments = open(f"/proc/{judge}/cmdline", "rb").read().split(b"\\0")
    folders = sorted({a.decode().split("=", 1)[-1] for a in arguments if b"/judge/" in a})
    tests = next(f for f in folders if f.rstrip("/").endswith("/judge/tests"))
    hidden = os.path.join(tests, "test_hidden_probe.py")
    plugins = tests[: -len("tests")] + "plugins"
    return {
        "read a hidden test": _try(lambda: open(hidden).read()),
        "list the tests' folder": _try(lambda: os.listdir(tests)),
        "write the plugin folder": _try(lambda: open(os.path.join(plugins, "getpass.py"), "w").close()),
        "read the judge's memory": _try(lambda: open(f"/proc/{judge}/mem", "rb").read(1)),
        "open the judge's descriptors": _open_any(f"/proc/{judge}/fd"),
        "signal the judge": _try(lambda: os.kill(judge, 0)),
        "trace the judge": ctypes.CDLL(None).ptrace(16, judge, 0, 0) == 0,
        "listen on a port": _try(lambda: socket.create_server(("127.0.0.1", 0)).close()),
    }


def at_home():
    return _try(lambda: open("mine.txt", "w").write("x")), _try(lambda: open(os.environ["TMPDIR"] + "/t", "w").close())
"""

PROBE_TESTS = """
import probe


def test_the_code_reaches_nothing_of_the_judges():
    assert probe.escapes() == {
        "read a hidden test": False, "list the tests' folder": False, "write the plugin folder": False,
        "read the judge's memory": False, "open the judge's descriptors": False, "signal the judge": False,
        "trace the judge": False, "listen on a port": False,
    }


def test_the_code_writes_its_copy_and_the_temporary_folder():
    assert probe.at_home() == (True, True)
"""

# A program-style probe: the program the hidden test runs tries to write where the grading pytest's modules come from
# (only the session's own folders: a probe must not write into this machine's Python where the seal did not hold).
PROGRAM = """
import json
import os

judge = os.getppid()
arguments = open(f"/proc/{judge}/cmdline", "rb").read().split(b"\\0")
folders = sorted({a.decode().split("=", 1)[-1] for a in arguments if b"/judge/" in a})
plugins = next(f for f in folders if f.rstrip("/").endswith("/judge/plugins"))
written = {}
for folder in [plugins, plugins + "/bench_grading", os.path.dirname(plugins) + "/tests"]:
    try:
        open(os.path.join(folder, "getpass.py"), "x").close()
        written[folder] = True
    except OSError:
        written[folder] = False
print(json.dumps(sorted(folder for folder, done in written.items() if done)))
"""

PROGRAM_TESTS = """
import json
import subprocess
import sys
from pathlib import Path


def test_the_program_writes_nothing_pytest_imports_from():
    done = subprocess.run([sys.executable, str(Path.cwd() / "probe.py")], capture_output=True, text=True)
    assert json.loads(done.stdout) == [], done.stderr
"""

CASES: dict[str, dict[str, Any]] = {
    "values": {"code": {"shapes.py": SHAPES}, "tests": VALUES, "grading": "library"},
    "refused": {"code": {"shapes.py": SHAPES}, "tests": REFUSED, "grading": "library"},
    "everything": {"code": {"shapes.py": SHAPES}, "tests": EVERYTHING, "grading": "library"},
    "aimed": {"code": {"shapes.py": SHAPES}, "tests": AIMED, "grading": "library"},
    "subclassing": {"code": {"shapes.py": SHAPES}, "tests": SUBCLASSING, "grading": "library"},
    "probe": {"code": {"probe.py": PROBE}, "tests": PROBE_TESTS, "grading": "library"},
    "program_probe": {"code": {"probe.py": PROGRAM}, "tests": PROGRAM_TESTS, "grading": "program"},
}


def write_fixture(root: Path, name: str, case: dict[str, Any]) -> Fixture:
    folder, hidden = root / "fixtures" / name, root / "hidden_tests" / name
    (hidden / "solution").mkdir(parents=True)
    folder.mkdir(parents=True)
    for rel, text in case["code"].items():
        (folder / rel).write_text(textwrap.dedent(text))
    (folder / "TASK.md").write_text("Nothing to do: the tests state what grading allows.\n")
    tests = textwrap.dedent(case["tests"])
    (hidden / "test_hidden_probe.py").write_text(tests)
    count = tests.count("\ndef test_")
    (folder / "fixture.yaml").write_text(
        f"task_file: TASK.md\nhidden_tests: hidden_tests/{name}\nhidden_total: {count}\nexpected_hidden_passing: 0\n"
        f"max_steps: 5\nvisible_tests: []\ngrading: {case['grading']}\nsolution_adds_tests: false\n"
    )
    return load_fixture(name, root)


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Fixture]:
    root = tmp_path_factory.mktemp("boundary")
    return {name: write_fixture(root, name, case) for name, case in CASES.items()}


def grade(fx: Fixture, tmp_path: Path, grader: Grader) -> Score:
    return score_diff(fx, "", grader, tmp_path, timeout_s=120)


def failed(score: Score) -> list[str]:
    return sorted(test for test, outcome in score.outcomes.items() if outcome != "passed")


def sealed_failed(score: Score) -> list[str]:
    """The tests of test_hidden_probe.py the sealed judge did not pass (plain pytest runs the code in its own process:
    there it reaches what it likes, and the verdict is plain pytest's)."""
    outcomes = parse_junit(score.junit_reports["junit-sealed.xml"], ["test_hidden_probe.py"])
    return sorted(test.split("::")[-1] for test in score.outcomes if outcomes.get(test) != "passed")


def test_what_tests_meet_in_the_code_behaves_as_in_their_own_process(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    score = grade(cases["values"], tmp_path, grader)

    assert (failed(score), score.hidden_passed, score.grading_tampered, score.error) == ([], 11, False, None)


def test_what_cannot_cross_is_graded_by_plain_pytest_alone_and_counted(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    score = grade(cases["refused"], tmp_path, grader)

    assert (score.hidden_passed, score.hidden_unsealed, score.grading_tampered, score.error) == (1, 1, False, None)
    assert "test_a_function_of_the_tests_cannot_cross" in sealed_failed(score)


def test_objects_equal_to_everything_are_flagged(cases: dict[str, Fixture], tmp_path: Path, grader: Grader) -> None:
    """One is compared by the code's own `==`, as plain pytest compares it, and passes its mutant twins too; the
    other derives from str, so the sealed judge compares what it holds, and fails the test plain pytest passed."""
    score = grade(cases["everything"], tmp_path, grader)

    assert (score.hidden_passed, score.grading_tampered) == (0, True), score.error


def test_a_test_only_plain_pytest_passes_fails_and_is_named(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    """A str subclass equal to the one answer the test expects and to none of its twins' (so no canary fires): plain
    pytest passes the test, the sealed judge compares what the object holds and fails it; the test counts as failed
    and the flag names it (bench/score/verdict.py)."""
    score = grade(cases["aimed"], tmp_path, grader)

    assert (score.hidden_passed, score.grading_tampered) == (0, True), score.error
    named = "test_hidden_probe.py::test_an_object_equal_to_the_expected_answer_alone"
    assert f"the sealed judge failed 1 tests that plain pytest passed ({named})" in (score.error or ""), score.error


def test_a_class_of_the_code_subclassed_by_the_tests_is_graded_by_plain_pytest_alone(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    score = grade(cases["subclassing"], tmp_path, grader)

    assert (score.hidden_passed, score.hidden_unsealed, score.grading_tampered) == (1, 1, False), score.error
    assert "Bigger subclasses a class of the code under test" in score.junit_reports["junit-sealed.xml"]


@pytest.mark.skipif(abi_version() < 1, reason="this kernel has no Landlock: the code's process is not confined")
def test_the_code_under_test_reaches_nothing_of_the_judges(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    score = grade(cases["probe"], tmp_path, grader)

    assert (sealed_failed(score), score.grading_tampered) == ([], False), score.error
    assert "unix sockets" in score.grading_confinement.split(";")[0], score.grading_confinement  # socket_filter.py


@pytest.mark.skipif(abi_version() < 1, reason="this kernel has no Landlock: the grading pytest is not sealed")
def test_a_program_writes_nothing_where_the_grading_pytest_imports_from(
    cases: dict[str, Fixture], tmp_path: Path, grader: Grader
) -> None:
    score = grade(cases["program_probe"], tmp_path, grader)

    assert (failed(score), score.grading_tampered, score.error) == ([], False, None)
