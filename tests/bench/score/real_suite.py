"""Issue 47, on demand: a real public suite in Aider's polyglot layout imports whole. Not a test module by name, so
`make test` does not collect it (none such suite is in the repository); run it by its path with the folder of the
suite's Python exercises, e.g. Aider's polyglot benchmark's python/exercises/practice (34 exercises at its commit
7e0611e), in both graders:

    BENCH_REAL_EXERCISES=DIR .venv/bin/python -m pytest -m "docker or not docker" tests/bench/score/real_suite.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.score.exercism import import_all
from bench.score.graders import Grader

pytestmark = pytest.mark.usefixtures("child_processes")


def test_a_real_suite_imports_whole(tmp_path: Path, grader: Grader) -> None:
    """No exercise of the suite is refused for its test style, and each example earns full marks (import_all
    refuses an example that does not, and a stub or example whose grading was flagged)."""
    folder = os.environ.get("BENCH_REAL_EXERCISES", "")
    if not folder or not Path(folder).is_dir():
        pytest.fail(f"BENCH_REAL_EXERCISES={folder!r}: give the folder of a suite's exercism exercises")
    source = Path(folder)

    imported, refused = import_all([source], tmp_path / "root", 0.0, 10, force=False, grader=grader)

    assert refused == {}
    assert len(imported) == len([exercise for exercise in source.iterdir() if (exercise / ".meta").is_dir()])
    assert all(done.solution_passing == done.hidden_total for done in imported)
