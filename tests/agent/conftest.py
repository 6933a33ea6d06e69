"""Fixtures for the agent's tests (helpers live in agent_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import CALC, TEST_CALC, AgentProcess, RunAgent, run_agent_in_process, run_agent_process


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one module and one passing test."""
    path = tmp_path / "repo"
    path.mkdir()
    (path / "calc.py").write_text(CALC)
    (path / "test_calc.py").write_text(TEST_CALC)
    (path / "TASK.md").write_text("Add a function sub(a, b) to calc.py, with a test.\n")
    return path


@pytest.fixture(scope="session")
def run_agent(child_processes: None) -> RunAgent:
    """The agent in this process (its shell commands and done checks start processes of their own)."""
    return run_agent_in_process


@pytest.fixture(scope="session")
def agent_process(child_processes: None) -> AgentProcess:
    """`python -m agent` as a process of its own."""
    return run_agent_process
