"""The reaper's scan of /proc (agent/reaper.py `_processes`): each process with its parent, group, session and
whether it is a zombie, even when its name holds the characters the stat line is split on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agent.reaper import _processes


def test_this_process_is_seen_with_its_parent_group_and_session() -> None:
    [me] = [p for p in _processes() if p.pid == os.getpid()]
    assert (me.ppid, me.group, me.session, me.zombie) == (os.getppid(), os.getpgrp(), os.getsid(0), False)


@pytest.mark.usefixtures("child_processes")
def test_a_child_named_like_the_stat_line_is_read_right_alive_and_dead(tmp_path: Path) -> None:
    sleep = shutil.which("sleep")
    assert sleep is not None
    tricky = tmp_path / "a) Z 1 (b"  # the kernel names the process after the file it ran
    tricky.symlink_to(sleep)
    child = subprocess.Popen([str(tricky), "30"], start_new_session=True)
    try:
        [seen] = [p for p in _processes() if p.pid == child.pid]
        assert (seen.ppid, seen.group, seen.session, seen.zombie) == (os.getpid(), child.pid, child.pid, False)
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped: a zombie
        [dead] = [p for p in _processes() if p.pid == child.pid]
        assert dead.zombie
    finally:
        child.kill()
        child.wait()
