"""Fixtures of the run tests: a small real disk (tests/tmpfs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tmpfs


@pytest.fixture
def small_disk(child_processes: None) -> Iterator[Path]:
    """A 4 MiB tmpfs of the test's own (mount and umount are child processes)."""
    with tmpfs.mounted() as mount:
        yield mount
