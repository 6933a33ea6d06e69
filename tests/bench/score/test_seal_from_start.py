"""The grading pytest is confined from its start, not only once its tests are collected (issue 47): in the open
session (plain pytest's verdict on library-style tests) the code under test is imported into pytest's own process
while the tests are collected, and what it does at import must not write a test not yet collected, the bench's
plugins, or anything outside the session (here a folder of this test's own, as the local grader's code could reach
this user's files). The sealed judge's code process is confined before it imports anything (test_boundary.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from bench.fixtures.fixture import Fixture, load_fixture
from bench.score.graders import LocalGrader
from bench.score.grading import score_diff
from bench.score.landlock import abi_version

pytestmark = [
    pytest.mark.usefixtures("child_processes"),
    pytest.mark.skipif(abi_version() < 1, reason="this kernel has no Landlock: the grading pytest is not sealed"),
]
MARK = "written-at-import.txt"

# At import the code writes a file in every folder of the judge that its process (or its parent's) names on its
# command line (the tests' folder, the plugins'), and in a folder outside the session.
PROBE = """
import os


def _judges_folders():
    found = set()
    for pid in ("self", str(os.getppid())):
        try:
            arguments = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        except OSError:
            continue
        for argument in arguments:
            path = argument.decode(errors="replace").split("=", 1)[-1]
            if "/judge/" in path:
                found.add(path if os.path.isdir(path) else os.path.dirname(path))
    return found


WRITTEN = []
for folder in sorted(_judges_folders() | {OUTSIDE}):
    try:
        with open(os.path.join(folder, MARK), "x"):
            WRITTEN.append(folder)
    except OSError:
        pass
"""
TESTS = """
import probe


def test_the_code_wrote_nothing_outside_its_session_while_imported():
    assert probe.WRITTEN == []
"""


def probe_fixture(root: Path, outside: Path) -> Fixture:
    folder, hidden = root / "fixtures" / "seal_probe", root / "hidden_tests" / "seal_probe"
    (hidden / "solution").mkdir(parents=True)
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(f"OUTSIDE = {str(outside)!r}\nMARK = {MARK!r}\n" + textwrap.dedent(PROBE))
    (folder / "TASK.md").write_text("Nothing to do: the test says what grading allows.\n")
    (hidden / "test_hidden_seal.py").write_text(textwrap.dedent(TESTS))
    (folder / "fixture.yaml").write_text(
        "task_file: TASK.md\nhidden_tests: hidden_tests/seal_probe\nhidden_total: 1\nexpected_hidden_passing: 1\n"
        "max_steps: 5\nvisible_tests: []\ngrading: library\nsolution_adds_tests: false\n"
    )
    return load_fixture("seal_probe", root)


def test_code_imported_while_tests_are_collected_writes_nothing_outside_its_session(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    fx = probe_fixture(tmp_path / "root", outside)

    score = score_diff(fx, "", LocalGrader(), tmp_path / "work", timeout_s=120)

    # Both judges imported the probe: the sealed judge's code process, then plain pytest, whose verdict counts.
    assert (score.hidden_passed, score.grading_tampered, score.error) == (1, False, None), score.junit_reports
    assert list(outside.iterdir()) == []
