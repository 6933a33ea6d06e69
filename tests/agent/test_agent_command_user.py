"""AGENT_COMMAND_USER: the model's commands run as another user than the agent and cannot reach its trace.

The real switch needs root (as in the bench's docker sandbox); tests/integration/test_docker_sandbox.py checks it
in the real container as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent.command_user import ENV, command_user, drop_to_command_user

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


@pytest.mark.parametrize(
    ("value", "expected"), [("", None), ("10001:10002", (10001, 10002)), ("10001", (10001, 10001)), (" 7:8 ", (7, 8))]
)
def test_the_command_user_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: tuple[int, int] | None
) -> None:
    monkeypatch.setenv(ENV, value)

    assert command_user() == expected
    assert (drop_to_command_user() is None) == (expected is None)


@pytest.mark.parametrize(("value", "problem"), [("agent", "two numbers"), ("0:0", "not run as root"), ("5:0", "root")])
def test_a_bad_command_user_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str, problem: str) -> None:
    monkeypatch.setenv(ENV, value)

    with pytest.raises(ValueError, match=problem):
        command_user()


@pytest.mark.usefixtures("child_processes")
def test_without_root_the_agent_refuses_to_start_rather_than_run_commands_as_itself() -> None:
    """As any user but root, the agent exits 2 with the reason (as root here: a child that first becomes nobody)."""
    become_nobody = "os.setgid(65534); os.setuid(65534); " if os.geteuid() == 0 else ""
    code = f"import os, sys; from agent.cli import main; {become_nobody}sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "--repo", "/", "--task", "x", "--events", "/dev/null", "--no-jeff"],
        env={**os.environ, ENV: f"{NOBODY}:{NOBODY}", "PYTHONPATH": str(ROOT)},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert "cannot run commands as another user" in done.stderr and "does not run as root" in done.stderr


SWITCHED = """
import json, os, signal
from pathlib import Path
from agent.command_user import become_agent_user
from agent.shell import run_command

trace = open(TRACE, "w")  # opened as root, like the agent's trace
become_agent_user()
result = run_command(
    f"id -u; id -G; grep -E '^CapEff' /proc/self/status; cat {TRACE}; echo read=$?; echo forged >> {TRACE}; "
    "kill -TERM $PPID; echo kill=$?",
    Path("/"), 30, 8000,
)
output = result.text
print(json.dumps({"resuid": os.getresuid(), "egid": os.getegid(), "output": output}))
"""


@pytest.mark.usefixtures("child_processes")
@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root, as in the docker sandbox")
def test_commands_run_as_the_command_user_and_cannot_write_the_trace_or_signal_the_agent() -> None:
    with tempfile.TemporaryDirectory() as tmp:  # not under tmp_path: nobody must be able to reach the trace's folder
        os.chmod(tmp, 0o755)
        trace = Path(tmp) / "events.jsonl"
        report = run_switched(f"TRACE = {str(trace)!r}\n" + textwrap.dedent(SWITCHED))
        assert trace.read_text() == "" and trace.stat().st_uid == 0

    assert report["resuid"] == [0, NOBODY, 0] and report["egid"] == NOBODY  # the agent: root only as real/saved
    lines = report["output"].splitlines()
    assert lines[:2] == [str(NOBODY), str(NOBODY)]  # the command: nobody, with no other group
    assert lines[2].split()[1] == "0000000000000000"
    assert "read=0" in lines  # it can see the trace: the folder is open to it
    assert "Permission denied" in report["output"]  # but not write it
    assert "Operation not permitted" in report["output"] and lines[-1] == "kill=1"  # nor signal the agent


def run_switched(script: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, ENV: f"{NOBODY}:{NOBODY}", "PYTHONPATH": str(ROOT)},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
