"""What the commands leave running is ended before a done check (and when the run ends): a background job, and a
process that double-forked into a session of its own; a process the agent did not start is left alone."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.reaper import Leftovers
from agent.tools import Workspace

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

# Fork, setsid, fork again, close the output: nothing ties the writer to the command that started it.
DETACH = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            with open(sys.argv[1], "a") as f:
                f.write(".")
            time.sleep(0.02)
        os._exit(0)
    os._exit(0)
os.wait()
"""


def grows(path: Path) -> bool:
    before = path.stat().st_size if path.exists() else 0
    time.sleep(0.3)
    return path.exists() and path.stat().st_size > before


def test_the_commands_leftovers_are_ended_and_nothing_else(repo: Path, tmp_path: Path) -> None:
    (repo / "detach.py").write_text(DETACH)
    detached, job = tmp_path / "detached", tmp_path / "job"
    python = shlex.quote(sys.executable)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # the agent's, not a command's
    try:
        with Leftovers() as leftovers:
            workspace = Workspace(repo, command_timeout=10, leftovers=leftovers)
            assert workspace.call("run", {"command": f"{python} detach.py {detached}"}).ok
            loop = f"while true; do echo . >> {job}; sleep 0.02; done"
            assert workspace.call("run", {"command": f"({loop}) > /dev/null 2>&1 &"}).ok
            assert grows(detached) and grows(job)  # both outlive their command, as a `run` lets them
            workspace.end_leftovers()
            assert not grows(detached) and not grows(job)
            assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_the_end_of_the_run_ends_them_too(repo: Path, tmp_path: Path) -> None:
    (repo / "detach.py").write_text(DETACH)
    detached = tmp_path / "detached"
    with Leftovers() as leftovers:
        Workspace(repo, command_timeout=10, leftovers=leftovers).call(
            "run", {"command": f"{shlex.quote(sys.executable)} detach.py {detached}"}
        )
        assert grows(detached)
    assert not grows(detached)
