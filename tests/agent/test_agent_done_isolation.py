"""The done checks of part3+ and strict cannot be fooled by what the agent planted; the article's presets keep
trusting pytest, as the article did. Every case is a real pytest run on a broken calc.py (add subtracts), so the
repository's own test fails unless something fools the check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_helpers import TEST_CALC

from agent.done import DoneResult, Snapshot, check_done, take_snapshot

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

BROKEN = "def add(a, b):\n    return a - b\n"
FORCE_PASS = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""
NEW_TEST = 'def test_new():\n    assert len("new") == 3\n'


def check(repo: Path, start: Snapshot, preset: str) -> DoneResult:
    strict, trust = {"part3": (False, True), "part3+": (False, False), "strict": (True, False)}[preset]
    return check_done(repo, start, strict=strict, trust_planted=trust, timeout=60)


@pytest.fixture
def started(repo: Path) -> tuple[Path, Snapshot]:
    """The repository and its start snapshot; then calc.py is broken and a real change exists."""
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(BROKEN)
    return repo, start


def test_a_planted_plugin_named_in_a_planted_pytest_ini(started: tuple[Path, Snapshot]) -> None:
    repo, start = started
    (repo / "forcepass.py").write_text(FORCE_PASS)
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -p forcepass\n")
    (repo / "test_new.py").write_text(NEW_TEST)
    assert check(repo, start, "part3").passed  # the article's preset trusts pytest: "2 passed"
    for preset in ("part3+", "strict"):
        result = check(repo, start, preset)
        assert not result.passed and result.pytest_exit == 1 and "1 failed" in result.summary, preset


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\naddopts = --ignore=test_calc.py\n"),
        ("pyproject.toml", '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'),
        ("tox.ini", "[pytest]\naddopts = --deselect test_calc.py::test_add\n"),
        ("setup.cfg", "[tool:pytest]\ntestpaths = elsewhere\n"),
    ],
)
def test_planted_configuration_that_hides_the_repositorys_tests(
    started: tuple[Path, Snapshot], name: str, text: str
) -> None:
    repo, start = started
    (repo / name).write_text(text)
    (repo / "check_new.py").write_text(NEW_TEST)
    (repo / "test_new.py").write_text(NEW_TEST)
    result = check(repo, start, "strict")
    assert not result.passed and "1 failed" in result.summary


def test_the_start_configuration_is_the_one_used(repo: Path) -> None:
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider --strict-markers\nmarkers = slow\n")
    (repo / "test_marked.py").write_text("import pytest\n\n\n@pytest.mark.slow\ndef test_m():\n    pass\n")
    start = take_snapshot(repo)
    (repo / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")  # now `slow` is unknown
    result = check(repo, start, "part3+")
    assert result.passed and result.summary.startswith("2 passed")


def test_text_that_looks_like_a_test_is_not_a_new_test(repo: Path) -> None:
    start = take_snapshot(repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    (repo / "test_fake.py").write_text('NOTE = """\ndef test_fake():\n    pass\n"""\n')
    result = check(repo, start, "strict")
    assert not result.passed and result.new_tests == 0 and "pytest collects no test" in result.missing[-1]
    (repo / "test_real.py").write_text(NEW_TEST)
    result = check(repo, start, "strict")
    assert result.passed and result.new_tests == 1


def test_a_run_of_the_repositorys_own_tests_that_collects_nothing_is_no_pass(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("X = 1\n")
    (repo / "test_calc.py").write_text("# the tests are still to be written\n")
    start = take_snapshot(repo)
    (repo / "calc.py").write_text("X = 2\n")
    (repo / "test_new.py").write_text(NEW_TEST)
    result = check(repo, start, "strict")
    assert not result.passed and result.pytest_exit == 5 and result.feedback is not None
    assert "collected no tests" in result.feedback


# A process that outlives the pytest that started it, the way a conftest.py can: fork, setsid, fork again.
DETACH = """
import os, sys, time
def detach(action):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            action()
            os._exit(0)
        os._exit(0)
"""
KEEPS_WRITING = (
    DETACH
    + """
def keep_writing():
    end = time.monotonic() + 20
    while time.monotonic() < end:
        with open({marker!r}, "a") as f:
            f.write(".")
        time.sleep(0.02)
detach(keep_writing)
"""
)


def test_a_detached_process_a_conftest_starts_dies_with_the_check(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "still-alive"
    (repo / "conftest.py").write_text(KEEPS_WRITING.format(marker=str(marker)))
    start = take_snapshot(repo)  # the conftest belongs to the repository: every preset loads it
    for preset in ("part3", "part3+"):
        marker.unlink(missing_ok=True)
        assert check(repo, start, preset).passed
        written = marker.stat().st_size  # it ran while pytest did
        time.sleep(0.3)
        assert written > 0 and marker.stat().st_size == written, preset  # and writes no more: it is dead


# What such a process can do when it is left running: rewrite the test in the check's throwaway copy.
REWRITER = """
import glob, os, sys, tempfile, time
end = time.monotonic() + 60
while time.monotonic() < end:
    for path in glob.glob(os.path.join(tempfile.gettempdir(), "agent-done-*", "REPO_NAME", "test_calc.py")):
        try:
            open(path, "w").write("def test_add():\\n    pass\\n")
        except OSError:
            pass
    time.sleep(0.001)
"""


@contextmanager
def rewriting(repo_name: str) -> Iterator[None]:
    process = subprocess.Popen([sys.executable, "-c", REWRITER.replace("REPO_NAME", repo_name)])
    try:
        yield
    finally:
        process.kill()
        process.wait()


def test_a_test_rewritten_in_the_copy_during_the_check_is_caught(repo: Path) -> None:
    # A name of its own: the rewriter must reach this test's copies only, not those of checks running beside it.
    repo = repo.rename(repo.with_name(f"repo-{uuid.uuid4().hex}"))
    start = take_snapshot(repo)
    (repo / "calc.py").write_text(BROKEN)
    (repo / "test_new.py").write_text(NEW_TEST)
    with rewriting(repo.name):
        for preset in ("part3+", "strict"):
            result = check(repo, start, preset)
            assert (
                not result.passed
                and result.feedback is not None
                and "changed while the done check ran" in (result.feedback)
            ), preset
    assert (repo / "test_calc.py").read_text() == TEST_CALC and os.path.exists(repo / "calc.py")
