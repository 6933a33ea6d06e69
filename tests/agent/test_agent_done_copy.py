"""The done check of part3+ and strict, piece by piece on a broken calc.py (add subtracts, so the repository's own
test fails unless something fools the check): every file pytest collects counts, the copy stays whole, links out
are refused, and a pytest that does not finish proves nothing. (End to end: test_agent_planted_done.py.)"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent import prompts
from agent.done import DoneResult, Snapshot, check_done, take_snapshot

BROKEN = "def add(a, b):\n    return a - b\n"
GOOD = "def add(a, b):\n    return a + b\n"
PATCH = "import _pytest.python\n\n_pytest.python.Function.runtest = lambda self: None\n"
NEW_TEST = 'def test_new():\n    assert len("new") == 3\n'


def check(repo: Path, start: Snapshot, preset: str = "part3+") -> DoneResult:
    strict, trust = {"part3": (False, True), "part3+": (False, False), "strict": (True, False)}[preset]
    return check_done(repo, start, strict=strict, trust_planted=trust, timeout=60)


@pytest.mark.usefixtures("child_processes")
def test_a_file_the_start_configuration_collects_is_planted_and_left_out(repo: Path) -> None:
    (repo / "pytest.ini").write_text("[pytest]\npython_files = check_*.py test_*.py\n")
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(BROKEN)
    (repo / "check_patch.py").write_text(PATCH + "\n\ndef test_patched():\n    pass\n")  # not named like a test
    assert check(repo, start, "part3").passed  # collected first, it makes every test after it pass
    for preset in ("part3+", "strict"):
        result = check(repo, start, preset)
        assert not result.passed and "check_patch.py" in result.planted and "1 failed" in result.summary, preset
    assert check(repo, start, "strict").new_tests == 1  # and it counts as the new test it is


@pytest.mark.usefixtures("child_processes")
def test_a_test_that_ends_the_interpreter_proves_nothing(repo: Path) -> None:
    start = take_snapshot(repo)
    (repo / "test_exit.py").write_text("import os\n\n\ndef test_exit():\n    os._exit(0)\n")
    result = check(repo, start)
    assert not result.passed and result.pytest_exit == 0 and result.feedback is not None
    assert prompts.CHECK_ENDED_EARLY.strip() in result.feedback


# A writer that is not the agent's (so nothing ends it): it puts the good calc.py into the check's copies.
WRITER = f"""
import glob, os, tempfile, time
end = time.monotonic() + 60
while time.monotonic() < end:
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "agent-done-*", "REPO_NAME", "calc.py")):
        try:
            if open(path).read() != {GOOD!r}:
                open(path, "w").write({GOOD!r})
        except OSError:
            pass
    time.sleep(0.001)
"""


@contextmanager
def writing_good_code(repo_name: str) -> Iterator[None]:
    process = subprocess.Popen([sys.executable, "-c", WRITER.replace("REPO_NAME", repo_name)])
    try:
        yield
    finally:
        process.kill()
        process.wait()


@pytest.mark.usefixtures("child_processes")
def test_code_rewritten_in_the_copy_during_the_check_fails_it(repo: Path) -> None:
    repo = repo.rename(repo.with_name(f"repo-{uuid.uuid4().hex}"))  # only this test's copies are written
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(BROKEN)
    with writing_good_code(repo.name):
        result = check(repo, start)
    assert not result.passed and result.feedback is not None
    assert "changed while the done check ran" in result.feedback and "calc.py (changed)" in result.feedback
    assert (repo / "calc.py").read_text() == BROKEN


@pytest.mark.parametrize("target", ["outside", "absolute"])
def test_a_link_out_of_the_repository_is_refused(repo: Path, target: str) -> None:
    start = take_snapshot(repo)
    outside = repo.parent / "outside"
    outside.mkdir()
    (outside / "conftest.py").write_text("def pytest_collection_modifyitems(items):\n    items.clear()\n")
    # A link beside the repository, or an absolute one into it: in the copy both lead out of the copy.
    (repo / "plugins").symlink_to(outside if target == "outside" else repo)
    result = check(repo, start)
    assert not result.passed and result.summary == "not run: links lead out of the repository"
    assert result.feedback is not None and f"plugins -> {outside if target == 'outside' else repo}" in result.feedback


@pytest.mark.usefixtures("child_processes")
def test_a_link_inside_the_repository_is_kept(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "helper.py").write_text("X = 1\n")
    (repo / "alias").symlink_to("pkg")
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(GOOD)
    result = check(repo, start)
    assert result.passed and result.planted == []


@pytest.mark.usefixtures("child_processes")
def test_a_new_module_the_code_imports_is_not_taken_away_when_pytest_collects_its_doctests(repo: Path) -> None:
    (repo / "pytest.ini").write_text("[pytest]\naddopts = --doctest-modules\n")
    start = take_snapshot(repo)
    (repo / "helpers.py").write_text('def plus(a, b):\n    """\n    >>> plus(1, 2)\n    3\n    """\n    return a + b\n')
    (repo / "calc.py").write_text("from helpers import plus\n\n\ndef add(a, b):\n    return plus(a, b)\n")
    result = check(repo, start)
    assert result.passed and result.planted == ["helpers.py"]  # collected, new: planted, yet still importable


@pytest.mark.usefixtures("child_processes")
def test_for_strict_a_new_doctest_file_is_a_test_not_a_change_of_the_code(repo: Path) -> None:
    start = take_snapshot(repo)
    (repo / "test_notes.txt").write_text(">>> 1 + 1\n2\n")
    result = check(repo, start, "strict")
    assert not result.passed and result.new_tests == 1 and result.missing == [prompts.MISSING_CHANGE]


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("name", ["venv", "env"])
def test_a_virtual_environment_in_the_repository_is_left_out_of_the_check(repo: Path, name: str) -> None:
    """Its interpreter is a link out of the repository, and its packages no part of the code under test: the check
    leaves it out (as pytest does from its collection) rather than refuse the repository."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / name)], check=True)
    start = take_snapshot(repo)
    assert not any(path.startswith(f"{name}/") for path in start.files)
    for preset in ("part3+", "strict"):
        result = check(repo, start, preset)
        assert result.pytest_exit == 0 and "1 passed" in result.summary, (preset, result.feedback)
    (repo / "calc.py").write_text(BROKEN)
    assert "1 failed" in check(repo, start).summary


SUB = GOOD + "\n\ndef sub(a, b):\n    return a - b\n"
BORROWED_TESTS = {
    "test_star.py": "from test_calc import *\n",
    "test_alias.py": "from test_calc import test_add as test_again\n",
    "test_class.py": "import test_calc\n\n\nclass TestBorrowed:\n    test_add = staticmethod(test_calc.test_add)\n",
}


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("name", list(BORROWED_TESTS))
def test_strict_counts_a_new_test_only_with_a_body_of_its_own(repo: Path, name: str) -> None:
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(SUB)
    (repo / name).write_text(BORROWED_TESTS[name])
    result = check(repo, start, "strict")
    assert not result.passed and result.new_tests == 0 and result.missing == [prompts.MISSING_TEST], result
    (repo / "test_sub.py").write_text("from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n")
    result = check(repo, start, "strict")
    assert result.passed and result.new_tests == 1, result


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(
    ("path", "text"),
    [("README.md", "# calc\n\n"), ("calc.py", GOOD + "# a comment\n"), ("calc.py", GOOD.replace("    ", "  "))],
)
def test_strict_counts_a_change_only_when_it_changes_code(repo: Path, path: str, text: str) -> None:
    (repo / "README.md").write_text("# calc\n")
    (repo / "calc.py").write_text(GOOD)
    start = take_snapshot(repo)
    (repo / path).write_text(text)
    (repo / "test_sub.py").write_text("def test_sub():\n    assert 3 - 1 == 2\n")
    result = check(repo, start, "strict")
    assert not result.passed and result.missing == [prompts.MISSING_CHANGE], result
    (repo / "calc.py").write_text(SUB)
    assert check(repo, start, "strict").passed
