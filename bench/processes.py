"""Child processes the bench waits for (the agent in a local sandbox, pytest when grading locally), and how to tell
that a pid still names the process the bench started.

Each runs in a session of its own, so a timeout or Ctrl-C can kill everything it started (tests and agents start
children of their own), and the bench never leaves one running behind it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path


def run_to_end(command: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float) -> tuple[int | None, bool, str]:
    """Run `command` with no input until it exits or `timeout_s` passes; returns (exit code, timed out, output).

    The exit code is None when the process was killed at the timeout. Output is stdout and stderr together,
    decoded as UTF-8 with undecodable bytes replaced.
    """
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        output, _ = proc.communicate()
        return None, True, output.decode(errors="replace")
    except BaseException:  # Ctrl-C: the child is in its own session, so it would outlive the bench
        kill_group(proc.pid)
        proc.wait()
        raise
    return proc.returncode, False, output.decode(errors="replace")


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a process and everything it started (it leads its own session); gone already is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def start_time(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/PID/stat); None when there is no such process.

    A pid with the same start time (on the same boot) is the same process: pids are reused, start times are not.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after the command name, which may hold spaces and parentheses
    return int(fields[19])  # field 22 of proc(5); fields[0] here is field 3


def boot_id() -> str:
    """This boot of this machine: start times count from it."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def is_running(pid: int, started: int | None) -> bool:
    """True when `pid` is still the process that started at `started` (and not a zombie)."""
    if started is None or start_time(pid) != started:
        return False
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text()
        return state[state.rfind(")") + 2 :].split()[0] != "Z"
    return False
