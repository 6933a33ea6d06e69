"""Hidden tests of the requested feature: due dates on `add` and `list`, and the `overdue` command.

They run todo.py as a program in a child process and import nothing of the repository (fixture.yaml: grading:
program); the current folder is the root of the graded copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROGRAM = Path.cwd() / "todo.py"  # the graded copy's program: the current folder is its root


def run_todo(path: Path, *args: str) -> tuple[int, str, str]:
    """Run the program as a user would, in a child process; its exit status, stdout and stderr."""
    env = {name: value for name, value in os.environ.items() if name != "TODO_FILE"}
    command = [sys.executable, str(PROGRAM), "--file", str(path), *args]
    done = subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_list_shows_due_dates(tmp_path):
    path = tmp_path / "todo.json"
    assert run_todo(path, "add", "pay rent", "--due", "2024-05-01")[0] == 0
    assert run_todo(path, "add", "buy milk")[0] == 0
    assert run_todo(path, "add", "file taxes", "--due", "2024-04-15")[0] == 0
    assert run_todo(path, "done", "3")[0] == 0

    assert run_todo(path, "list")[1].splitlines() == ["  1 [ ] pay rent (due 2024-05-01)", "  2 [ ] buy milk"]
    assert run_todo(path, "list", "--all")[1].splitlines() == [
        "  1 [ ] pay rent (due 2024-05-01)",
        "  2 [ ] buy milk",
        "  3 [x] file taxes (due 2024-04-15)",
    ]


def test_due_dates_are_validated(tmp_path):
    path = tmp_path / "todo.json"
    for bad in ["2024-13-01", "2023-02-29", "next friday"]:
        status, out, _ = run_todo(path, "add", "bad date", "--due", bad)
        assert status != 0, f"--due {bad} was accepted"
    assert run_todo(path, "list")[1].strip() == "nothing to do"

    assert run_todo(path, "add", "leap day party", "--due", "2024-02-29")[0] == 0
    assert run_todo(path, "list")[1].splitlines() == ["  1 [ ] leap day party (due 2024-02-29)"]


def test_overdue_lists_open_items_due_before_today_earliest_first(tmp_path):
    path = tmp_path / "todo.json"
    run_todo(path, "add", "renew insurance", "--due", "2024-05-09")
    run_todo(path, "add", "no deadline")
    run_todo(path, "add", "call the bank", "--due", "2024-03-02")
    run_todo(path, "add", "already handled", "--due", "2024-01-05")
    run_todo(path, "add", "due today", "--due", "2024-05-10")
    run_todo(path, "add", "next month", "--due", "2024-06-01")
    run_todo(path, "add", "same day as the bank", "--due", "2024-03-02")
    run_todo(path, "done", "4")

    status, out, _ = run_todo(path, "overdue", "--today", "2024-05-10")

    assert status == 0
    assert out.splitlines() == [
        "  3 [ ] call the bank (due 2024-03-02)",
        "  7 [ ] same day as the bank (due 2024-03-02)",
        "  1 [ ] renew insurance (due 2024-05-09)",
    ]


def test_overdue_says_so_when_nothing_is_overdue(tmp_path):
    path = tmp_path / "todo.json"
    run_todo(path, "add", "due today", "--due", "2024-05-10")
    run_todo(path, "add", "done late", "--due", "2024-01-01")
    run_todo(path, "add", "no deadline")
    run_todo(path, "done", "2")

    status, out, _ = run_todo(path, "overdue", "--today", "2024-05-10")

    assert status == 0
    assert out.strip() == "nothing overdue"
    # The listing reads the list; it must not change it.
    assert len(run_todo(path, "list", "--all")[1].splitlines()) == 3
