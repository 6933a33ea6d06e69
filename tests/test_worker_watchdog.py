"""The test processes' watchdog (tests/worker_watchdog.py): a test process killed in the middle of a test leaves
nothing running, not even what it started in a session of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import worker_watchdog

pytestmark = pytest.mark.usefixtures("child_processes")
TESTS = Path(__file__).parent
# A test that starts a sleeper in a session of its own (as a test starts `make bench`) and is then killed.
KILLED_TEST = """
import os, signal, subprocess

def test_killed_mid_way():
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open(os.environ["SLEEPER_PID"], "w") as f:
        f.write(str(sleeper.pid))
    os.kill(os.getpid(), signal.SIGKILL)
"""


def running(pid: int) -> bool:
    """Alive and not a zombie (a test process of the suite may be a subreaper that has not reaped it yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_ended(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def test_a_test_process_killed_mid_test_leaves_nothing_running(tmp_path: Path) -> None:
    (tmp_path / "test_killed.py").write_text(KILLED_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    pid_file, log = tmp_path / "sleeper.pid", tmp_path / "pytest.log"
    env = os.environ | {"PYTHONPATH": str(TESTS), "SLEEPER_PID": str(pid_file)}
    with open(log, "wb") as output:  # not a pipe: the sleeper would hold it open
        code = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "worker_watchdog", "-p", "no:cacheprovider", "test_killed.py"],
            cwd=tmp_path,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=120,
        ).returncode
    sleeper = int(pid_file.read_text())
    try:
        assert code == -signal.SIGKILL, log.read_text()
        assert wait_ended(sleeper, 30), f"sleep {sleeper} still runs after its test process was killed"
    finally:
        if running(sleeper):
            os.kill(sleeper, signal.SIGKILL)
    deadline = time.monotonic() + 10  # the watchdog's line comes after the stop
    while "stopped what a test process left running" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f"pid {sleeper}: sleep 300" in log.read_text()


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    tag = "test-" + os.urandom(8).hex()
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
    env = os.environ | {worker_watchdog.TAG: tag}
    with subprocess.Popen(
        [sys.executable, "-c", ignoring + "time.sleep(300)"], env=env, stdout=subprocess.PIPE
    ) as stubborn:
        try:
            assert stubborn.stdout is not None and stubborn.stdout.readline() == b"ready\n"
            assert worker_watchdog.tagged(tag) == [stubborn.pid]
            stopped = worker_watchdog.stop_tagged(tag, grace_s=0.5)
            assert [line.split(":")[0] for line in stopped] == [f"pid {stubborn.pid}"]
            assert stubborn.wait(10) == -signal.SIGKILL
        finally:
            stubborn.kill()
