"""Hidden tests: behaviour the due-date change must not break. Both pass on the original todo.py.

Like every hidden test of this fixture (fixture.yaml: grading: program), they run todo.py as a program in a child
process and import nothing of the repository; the current folder is the root of the graded copy.
"""

from __future__ import annotations

import json
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


def test_commands_without_due_dates_work_as_before(tmp_path):
    path = tmp_path / "list.json"
    for text in ["sweep the porch", "renew passport", "order printer ink"]:
        assert run_todo(path, "add", text)[0] == 0
    assert run_todo(path, "done", "2")[0] == 0
    assert run_todo(path, "remove", "1")[0] == 0
    assert run_todo(path, "add", "return library books")[0] == 0

    status, out, _ = run_todo(path, "list", "--all")

    assert status == 0
    # Ids are not reused after a removal, and items without a due date print exactly as before.
    assert out.splitlines() == ["  2 [x] renew passport", "  3 [ ] order printer ink", "  4 [ ] return library books"]
    assert run_todo(path, "remove", "1")[0] == 1


def test_a_file_from_the_current_version_still_loads(tmp_path):
    path = tmp_path / "old.json"
    old = {
        "version": 1,
        "next_id": 4,
        "items": [
            {"id": 1, "text": "fix the bike light", "done": False},
            {"id": 3, "text": "send the invoice", "done": True},
        ],
    }
    path.write_text(json.dumps(old))

    status, out, _ = run_todo(path, "list", "--all")
    assert status == 0
    assert out.splitlines() == ["  1 [ ] fix the bike light", "  3 [x] send the invoice"]

    assert run_todo(path, "add", "buy stamps")[0] == 0
    assert run_todo(path, "list")[1].splitlines() == ["  1 [ ] fix the bike light", "  4 [ ] buy stamps"]
