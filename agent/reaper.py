"""Ending every process a command started, also those that left its process group or its session.

A command runs in a session of its own (its shell is the leader, so the session id is the shell's pid). Killing
the process group ends what stayed in it; `kill_session` also ends every process of the session that moved to
another group. A process can leave the session too (setsid after a double fork, as a conftest.py may do), and then
nothing ties it to the command but its ancestry, which the fork cut: its parent died and the kernel gave it to
init. A child subreaper (Linux prctl PR_SET_CHILD_SUBREAPER, allowed to any user) gets such orphans instead, so
that they stay its descendants:

- `Leftovers` makes the agent a subreaper for its whole run and keeps the sessions of its commands; before each
  done check, and when the run ends, it kills what they left running: their sessions, and every descendant of the
  agent that was not already its child when the run began.
- `Contained` does the same for a single command (the done check's pytest): when it ends, all it started dies.

Elsewhere (no /proc, no prctl) only the commands' sessions are killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

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
    """Every process /proc shows (empty without /proc). Read as bytes with plain os calls: a kill runs several scans
    of every process on the host, and pathlib's glob and text decoding took most of the time."""
    found = []
    try:
        names = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for name in names:
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
            fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (name) ": state ppid pgrp session ...
            found.append(
                _Process(
                    pid=int(name),
                    ppid=int(fields[1]),
                    group=int(fields[2]),
                    session=int(fields[3]),
                    zombie=fields[0] == b"Z",
                )
            )
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


def _descendants(me: int, processes: list[_Process], left_alone: set[int]) -> list[_Process]:
    """The living processes below `me`, leaving out the children in `left_alone` and what is below them."""
    children: dict[int, list[_Process]] = {}
    for process in processes:
        children.setdefault(process.ppid, []).append(process)
    found, pending = [], [p for p in children.get(me, []) if p.pid not in left_alone]
    while pending:
        process = pending.pop()
        found.append(process)
        pending.extend(children.get(process.pid, []))
    return found


def _reap(processes: list[_Process], me: int, left_alone: set[int], spare: int | None = None) -> bool:
    """Collect the exit of every dead child of `me` among `processes` but those in `left_alone` and `spare` (a Popen
    reaps its own); True when any was found."""
    dead = [p.pid for p in processes if p.ppid == me and p.zombie and p.pid not in left_alone and p.pid != spare]
    for pid in dead:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return bool(dead)


def _kill_until_quiet(alive: Callable[[list[_Process]], list[int]], reap: Callable[[list[_Process]], bool]) -> None:
    """Kill what `alive(processes)` lists, round after round, until two rounds in a row find nothing (alive nor
    dead). A round that killed nothing reaps from the scan it already took (the scans are a done check's main cost)."""
    quiet_rounds = 0
    for _ in range(ROUNDS):
        processes = _processes()
        pids = alive(processes)
        for pid in pids:
            _kill(pid)
        reaped = reap(_processes() if pids else processes)
        quiet_rounds = 0 if pids or reaped else quiet_rounds + 1
        if quiet_rounds >= 2:
            return
        time.sleep(0.01)


class Leftovers:
    """For a whole run: orphans of the commands become this process's children; end_all() ends what they left."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.sessions: set[int] = set()
        self.children_before: set[int] = set()
        self.set_subreaper = False

    def __enter__(self) -> Leftovers:
        self.children_before = {p.pid for p in _processes() if p.ppid == self.me}
        if not _is_subreaper():
            self.set_subreaper = _libc_prctl(PR_SET_CHILD_SUBREAPER, 1) == 0
        return self

    def __exit__(self, *exc: object) -> None:
        self.end_all()
        if self.set_subreaper:
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 0)

    def started(self, session: int) -> None:
        """A command started in the session `session` (its shell's pid)."""
        self.sessions.add(session)

    def finished(self) -> None:
        """After a command: collect the orphans that died, and forget sessions with no process left (their ids
        may be given to new, unrelated processes; where /proc cannot tell, every session is forgotten)."""
        processes = _processes()
        _reap(processes, self.me, self.children_before)
        living = {p.session for p in processes if not p.zombie}  # the zombies just reaped are no session's
        self.sessions &= living

    def end_all(self) -> None:
        """Kill everything the commands left running, until nothing is left."""

        def alive(scanned: list[_Process]) -> list[int]:
            processes = [p for p in scanned if not p.zombie]
            found = {p.pid for p in _descendants(self.me, processes, self.children_before)}
            return sorted(found | {p.pid for p in processes if p.session in self.sessions})

        for session in self.sessions:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(session, signal.SIGKILL)
        _kill_until_quiet(alive, lambda processes: _reap(processes, self.me, self.children_before))
        self.sessions.clear()


class Contained:
    """While active, orphans of the commands become this process's children; kill_all(session) ends them all."""

    def __enter__(self) -> Contained:
        self.me = os.getpid()
        self.children_before = {p.pid for p in _processes() if p.ppid == self.me}
        self.was_subreaper = _is_subreaper()
        if not self.was_subreaper:
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 1)
        return self

    def kill_all(self, session: int) -> None:
        """Kill the session's processes and every orphan adopted meanwhile, round after round until none is left."""

        def alive(scanned: list[_Process]) -> list[int]:
            processes = [p for p in scanned if not p.zombie]
            adopted = {p.pid for p in _descendants(self.me, processes, self.children_before)}
            return sorted(adopted | {p.pid for p in processes if p.session == session})

        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(session, signal.SIGKILL)
        # The session's leader is the command's shell: its Popen reaps it.
        _kill_until_quiet(alive, lambda processes: _reap(processes, self.me, self.children_before, spare=session))

    def __exit__(self, *exc: object) -> None:
        if not self.was_subreaper:
            _libc_prctl(PR_SET_CHILD_SUBREAPER, 0)
