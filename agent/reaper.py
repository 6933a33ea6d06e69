"""Ending every process a command started, also those that left its process group or its session.

A command runs in a session of its own (its shell is the leader, so the session id is the shell's pid). Killing
the process group ends what stayed in it; `kill_session` also ends every process of the session that moved to
another group. A process can leave the session too (setsid after a double fork, as a conftest.py may do), and then
nothing ties it to the command but its ancestry, which the fork cut: its parent died and the kernel gave it to
init. `Contained` makes the agent a child subreaper (Linux prctl PR_SET_CHILD_SUBREAPER, allowed to any user)
while a command runs, so such orphans become the agent's children instead, and kills them too when the command ends.
Elsewhere (no /proc, no prctl) only the group is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
ROUNDS = 200  # a process that forks as fast as it is killed still loses: each round kills all that exist


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    group: int
    session: int
    zombie: bool


def _processes() -> list[_Process]:
    """Every process /proc shows (empty without /proc)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) ": state ppid pgrp session ...
            found.append(_Process(int(entry.name), int(fields[1]), int(fields[2]), int(fields[3]), fields[0] == "Z"))
    return found


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def kill_session(session: int) -> None:
    """SIGKILL the process group `session` and every process of the session `session`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(session, signal.SIGKILL)
    for process in _processes():
        if process.session == session and not process.zombie:
            _kill(process.pid)


def _libc_prctl(option: int, value: int) -> int | None:
    """prctl(option, value), or None where there is no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0)
    except (OSError, AttributeError):
        return None
    return result


def _is_subreaper() -> bool:
    flag = ctypes.c_int(0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value != 0
    except (OSError, AttributeError):
        return False


class Contained:
    """While active, orphans of the commands become this process's children; kill_all(session) ends them all."""

    def __enter__(self) -> Contained:
        me = os.getpid()
        self.children_before = {p.pid for p in _processes() if p.ppid == me}
        self.was_subreaper = _is_subreaper()
        if not self.was_subreaper:
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 1)
        return self

    def kill_all(self, session: int) -> None:
        """Kill the session's processes and every orphan adopted meanwhile, round after round until none is left."""
        me = os.getpid()
        quiet_rounds = 0
        for _ in range(ROUNDS):
            kill_session(session)
            adopted = [  # the session's leader is the command's shell: its Popen reaps it
                p for p in _processes() if p.ppid == me and p.pid not in self.children_before and p.pid != session
            ]
            for process in adopted:
                if not process.zombie:
                    _kill(process.pid)
            for process in adopted:  # reap them, so that no zombie is left behind
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(process.pid, os.WNOHANG)
            in_session = [p for p in _processes() if p.session == session and not p.zombie]
            quiet_rounds = 0 if adopted or in_session else quiet_rounds + 1
            if quiet_rounds >= 2:
                return
            time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        if not self.was_subreaper:
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 0)
