"""Helpers for the agent's tests: running the agent in-process or as a process, and reading its trace."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agent.cli import main

ROOT = Path(__file__).resolve().parents[2]
CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
EVENTS = {
    "start",
    "response",
    "cut",
    "http_error",
    "clear",
    "tool",
    "jeff",
    "approval",
    "done_check",
    "restored",
    "summary",
    "jeff_step",
    "escalate",
    "stop",
}


@dataclass
class Run:
    exit_code: int
    events: list[dict[str, Any]]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]

    @property
    def stop(self) -> dict[str, Any]:
        return self.events[-1]


def read_events(path: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    check_trace_invariants(events)
    return events


def check_trace_invariants(events: list[dict[str, Any]]) -> None:
    """What holds for every trace: known events with t, time never going back, and `stop` last and only there."""
    assert events, "the trace is empty"
    assert all(e["event"] in EVENTS and isinstance(e["t"], float | int) for e in events)
    assert [e["t"] for e in events] == sorted(e["t"] for e in events)
    assert events[-1]["event"] == "stop"
    assert [e["event"] for e in events].count("stop") == 1


def run_agent_in_process(repo: Path, url: str, *extra: str, task: str = "Add sub(a, b) to calc.py.") -> Run:
    """The agent in-process, with the defaults the tests want unless `extra` overrides them. Tests take it as the
    `run_agent` fixture (tests/agent/conftest.py), which marks them: its commands and done check start processes."""
    events = repo.parent / "events.jsonl"
    argv = ["--repo", str(repo), "--task", task, "--flint", url, "--events", str(events)]
    defaults = {"--approve": "no", "--retry-delay": "0.01", "--command-timeout": "30"}
    for option, value in defaults.items():
        if option not in extra:
            argv += [option, value]
    if "--jeff" not in extra:
        argv.append("--no-jeff")
    exit_code = main([*argv, *extra])
    return Run(exit_code, read_events(events))


def run_agent_process(
    args: list[str], *, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m agent` as a separate process, where exit status and stderr are what is tested (the `agent_process`
    fixture)."""
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


class RunAgent(Protocol):
    def __call__(self, repo: Path, url: str, *extra: str, task: str = ...) -> Run: ...


class AgentProcess(Protocol):
    def __call__(
        self, args: list[str], *, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]: ...


def last_request_text(requests: list[dict[str, Any]]) -> str:
    return json.dumps(requests[-1]["messages"])
