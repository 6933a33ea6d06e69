"""The suite's own small task, `calc` (tests/fixtures_root/README.md), for the bench tests that need a real task run,
diffed and graded but test nothing of todo_repo's grading: runner faults, resumes, shards, workers. Its grading starts
one pytest; todo_repo's hidden tests start `todo.py` about a hundred times."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).parent / "fixtures_root"
NAME = "calc"
# The bench settings that choose it (bench.yaml's fixtures_root and fixtures).
SETTINGS: dict[str, object] = {"fixtures_root": str(ROOT), "fixtures": [NAME]}
# What grading gives the untouched copy: hidden tests passed and run, visible tests passed (fixture.yaml).
UNTOUCHED = ("1", "3", "1")
VISIBLE_TEST = "test_calc.py"
# A file the agent may read: the code of the task.
CODE = "calc.py"
# The hidden tests' one file, and a pytest -k expression that leaves only the test the untouched code passes.
HIDDEN_TEST = "test_hidden_calc.py"
DESELECT_NEW = "-k 'not sub and not mul'"


def slow_fixtures(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the small task whose hidden test waits while the file FLAG exists (a grading that lasts as long as the
    test wants; the grading's confinement lets it read FLAG, not write anywhere); returns the fixtures root and FLAG."""
    root = tmp_path / "fixtures_root"
    shutil.copytree(ROOT, root)
    flag = tmp_path / "slow"
    flag.touch()
    hidden = root / "hidden_tests" / NAME / HIDDEN_TEST
    slow = f"    while os.path.exists({str(flag)!r}):\n        time.sleep(0.1)\n"
    test = "def test_add_is_unchanged():\n"
    assert test in hidden.read_text(), f"{hidden} has no {test.strip()}"
    text = hidden.read_text().replace(test, test + slow)
    hidden.write_text(f"import os\nimport time\n{text}")
    return root, flag
