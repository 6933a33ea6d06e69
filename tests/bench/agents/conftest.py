"""The agents' unit tests read no Node.js version from this machine: that starts `node`, a child process the fast
tier refuses (tests/process_guard.py). A test of the version check sets its own."""

from __future__ import annotations

import pytest

from bench.agents import pi


@pytest.fixture(autouse=True)
def node_20(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pi, "node_version", lambda: (20, 20))
