"""`python -m bench` as users meet it: bad input gets one line on stderr saying what to do, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

ROOT = Path(__file__).resolve().parents[2]
URL = "http://127.0.0.1:9"  # nothing listens there: the bench must refuse the other input first


def bench(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "--config", "no-such.yaml"], "config file no-such.yaml not found"),
        (["run", "--presets", "part9", "--sandbox", "local", "--servers", "external"], "unknown preset 'part9'"),
        (["run", "--servers", "external", "--sandbox", "local", "--flint-url", ""], "needs Flint's URL"),
        (
            ["run", "--fixtures", "nope_repo", "--sandbox", "local", "--servers", "external", "--flint-url", URL],
            "unknown fixture",
        ),
        (["compare", "missing-a.csv", "missing-b.csv"], "missing-a.csv"),
        (["report", "missing.csv"], "missing.csv"),
        (["score", "no-such-run-dir", "--sandbox", "local"], "no-such-run-dir"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    done = bench(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: ") and says in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_usage_errors_come_from_argparse() -> None:
    done = bench("run", "--ctx", "big")
    assert done.returncode == 2 and "expected context sizes such as 4096,8192 or 4k,8k" in done.stderr


def test_an_empty_item_in_a_list_is_refused_not_dropped() -> None:
    done = bench("run", "--ctx", "4096,,8192")
    assert done.returncode == 2 and "'4096,,8192' has an empty item" in done.stderr
