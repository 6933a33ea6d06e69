"""Child processes the bench waits for (the agent in a local sandbox, pytest when grading locally), the capped
output kept of them, and how to tell that a pid still names the process the bench started.

Each runs in a session of its own, so a timeout or Ctrl-C can kill everything it started (tests and agents start
children of their own), and the bench never leaves one running behind it. Their output is kept up to OUTPUT_LIMIT
bytes: its start and its end, with a note where the middle was cut.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from bench import stopping

UNTIL_POLL_S = 0.5  # how often run_to_end asks its `until`
OUTPUT_LIMIT = 4 * 1024 * 1024  # bytes kept of an agent's or a grading pytest's output (agent.log)


class CappedOutput:
    """Bytes kept up to `limit`: the first half and the last half, and a count of what was cut between them."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        del self.tail[: max(0, len(self.tail) - (self.limit - self.limit // 2))]

    @property
    def cut(self) -> int:
        """Bytes left out between head and tail."""
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        """What was kept, decoded (undecodable bytes replaced), with a line saying where and how much was cut."""
        head, tail = self.head.decode(errors="replace"), self.tail.decode(errors="replace")
        if not self.cut:
            return head + tail
        return (
            f"{head}\n[bench: {self.cut} bytes of output cut here; the first and last {self.limit // 2} kept]\n{tail}"
        )

    def read_all(self, stream: IO[bytes]) -> None:
        """Read `stream` to its end into this buffer (memory stays within the limit whatever the stream holds)."""
        while chunk := stream.read(65536):
            self.add(chunk)


def run_to_end(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    output_limit: int = OUTPUT_LIMIT,
    until: Callable[[], bool] | None = None,
) -> tuple[int | None, bool, str]:
    """Run `command` with no input until it exits or `timeout_s` passes; returns (exit code, timed out, output).
    `until`, asked every UNTIL_POLL_S while it runs: once True, the process and all it started are killed (the
    recording proxy's step limit: bench/sandbox/proxy_stop.py), and the exit code is the kill's.

    The exit code is None when the process was killed at the timeout. Output is stdout and stderr together, capped
    (CappedOutput), decoded as UTF-8 with undecodable bytes replaced.
    """
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    output = CappedOutput(output_limit)
    reader = threading.Thread(target=output.read_all, args=(proc.stdout,), daemon=True)
    reader.start()
    code: int | None
    try:
        code, timed_out = wait_until(proc, timeout_s, until), False  # a worker's stop is seen (bench.stopping)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        proc.wait()
        code, timed_out = None, True
    except BaseException:  # Ctrl-C, a worker's stop: the child is in its own session, so it would outlive the bench
        kill_group(proc.pid)
        proc.wait()
        reader.join(5)
        if not reader.is_alive():
            proc.stdout.close()
        raise
    reader.join(30)  # a grandchild that left the session may hold the pipe open: its output is not waited for
    if not reader.is_alive():
        proc.stdout.close()
    return code, timed_out, output.text()


def wait_until(proc: subprocess.Popen[bytes], timeout_s: float, until: Callable[[], bool] | None) -> int:
    """stopping.wait_process, and the process group killed once `until()` is True (asked before the process is
    reaped, so its pid still names it)."""
    deadline = time.monotonic() + timeout_s
    while until is not None:
        try:
            return stopping.wait_process(proc, min(UNTIL_POLL_S, max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if until():
                kill_group(proc.pid)
                return proc.wait()
            if time.monotonic() >= deadline:
                raise
    return stopping.wait_process(proc, timeout_s)


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a process and everything it started (it leads its own session); gone already is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def terminate(
    signal_it: Callable[[int], None], running: Callable[[], bool], grace_s: float = 10.0, again_after_s: float = 1.0
) -> None:
    """SIGTERM; a second one after `again_after_s`; SIGKILL once `grace_s` have passed. llama-server's first SIGTERM
    waits for the requests in flight (a long answer: until it is written, however long); its second ends it at once
    (exit status 1), and nothing a bench keeps is lost with it."""
    started = time.monotonic()
    signal_it(signal.SIGTERM)
    signalled_again = False
    while running():
        waited = time.monotonic() - started
        if waited >= grace_s:
            signal_it(signal.SIGKILL)
            return
        if waited >= again_after_s and not signalled_again:
            signal_it(signal.SIGTERM)
            signalled_again = True
        time.sleep(0.05)


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
