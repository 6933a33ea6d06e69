"""The suite's order (tests/long_first.py): units longest first by the table of this machine's last times, a group's
tests together as one unit, an untimed heavy test among the long ones; the run's times go into the table."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("child_processes")
TESTS = Path(__file__).parent
SUITE = """
import pytest

def test_short():
    pass

def test_long():
    pass

@pytest.mark.xdist_group("pair")
def test_pair_one():
    pass

@pytest.mark.xdist_group("pair")
def test_pair_two():
    pass

@pytest.mark.slow
def test_new_and_heavy():
    pass

def test_new_and_light():
    pass
"""
TIMES = {"test_suite.py::test_short": 1.0, "test_suite.py::test_long": 100.0}
TIMES |= {"test_suite.py::test_pair_one": 40.0, "test_suite.py::test_pair_two": 40.0}


def test_the_longest_units_run_first_and_the_runs_times_are_kept(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n    xdist_group: group\n")
    table = tmp_path / "cache" / "agent-bench" / "test-durations.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps(TIMES | {"test_elsewhere.py::test_kept": 3.0}))
    env = os.environ | {"PYTHONPATH": str(TESTS), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "long_first", "-p", "no:cacheprovider", "-v", "test_suite.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    ran = re.findall(r"^test_suite\.py::(\w+) PASSED", done.stdout, flags=re.M)
    # 100 s; the pair's 80 s together; the untimed heavy one's guess (60 s); 1 s; the untimed light one's 0
    assert ran == [
        "test_long",
        "test_pair_one",
        "test_pair_two",
        "test_new_and_heavy",
        "test_short",
        "test_new_and_light",
    ]
    kept = json.loads(table.read_text())
    assert kept["test_elsewhere.py::test_kept"] == 3.0  # another module's time stays
    assert set(kept) == {*TIMES, "test_elsewhere.py::test_kept", "test_suite.py::test_new_and_heavy"} | {
        "test_suite.py::test_new_and_light"
    }
    assert kept["test_suite.py::test_long"] < 100  # this run's time replaced the old one
