"""Python: pytest, graded by sessions of the bench's own (bench/score/sessions.py), not by a report read here."""

from __future__ import annotations

from bench.languages.base import Language

PYTHON = Language(
    name="python",
    test_patterns=("test_*.py", "*_test.py"),
    source_suffixes=(".py",),
    test_command="pytest",
)
