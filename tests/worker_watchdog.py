"""Whatever a test process starts ends with it, however it ends.

A bench a test starts in a session of its own (as `make bench` is in tests/e2e/test_make_bench_resume.py), with its
llama-servers, is out of reach of the terminal's Ctrl-C and of the test's clean-up once the test process is killed
(an interrupted CI run's workers are): it ran on, and its servers stayed. So every process the suite starts carries
a tag of its test process in its environment (inherited down to the llama-servers a bench starts), and a watchdog
started with each test process (each pytest-xdist worker, or pytest itself) waits in a session of its own for that
process to end, which closes the pipe it reads, and then stops every process still carrying the tag: SIGTERM first
(a bench stops its servers on it), SIGKILL after a grace. What it stopped it names on stderr: a test that leaks a
process shows up there.

`python tests/worker_watchdog.py TAG` is the watchdog; as a pytest plugin (tests/conftest.py) this module starts it.
The fast tier starts no process (tests/process_guard.py), so it starts none there either.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

TAG = "AGENTBENCH_TEST_PROCESS"
GRACE_S = 10.0


def tagged(tag: str) -> list[int]:
    """The processes whose environment carries `tag` (their environment at start: /proc/PID/environ)."""
    mark = f"{TAG}={tag}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return [pid for pid in found if pid != os.getpid()]


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"


def stop_tagged(tag: str, grace_s: float = GRACE_S) -> list[str]:
    """SIGTERM to every process carrying `tag`, SIGKILL to those still there after `grace_s`; what was stopped."""
    stopped = []
    for pid in tagged(tag):
        stopped.append(f"pid {pid}: {command_line(pid)}")
        signal_process(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while (left := tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        signal_process(pid, signal.SIGKILL)
    return stopped


def signal_process(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


class Stopped(Exception):
    """SIGTERM to the watchdog (another watchdog's, when a test process that ran a pytest of its own ended)."""


def stop_watching(signum: int, frame: object) -> None:
    raise Stopped


def main(argv: list[str]) -> int:
    (tag,) = argv
    signal.signal(signal.SIGTERM, stop_watching)  # told to stop, it still stops what it watches first
    with contextlib.suppress(Stopped):
        sys.stdin.buffer.read()  # returns when the test process has ended: the pipe's only writer is gone
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one does not cut the stopping short
    for line in stop_tagged(tag):
        print(f"worker_watchdog: stopped what a test process left running: {line}", file=sys.stderr, flush=True)
    return 0


# The watchdog of this test process: kept referenced for the process's life, since its pipe closing is the signal.
watchdog: subprocess.Popen[bytes] | None = None


def pytest_configure(config: pytest.Config) -> None:
    """In each process that runs tests (not pytest-xdist's controller, which runs none): watch, then tag."""
    global watchdog
    if config.getoption("--no-child-processes", default=False):
        return
    if config.getoption("numprocesses", default=None) and not hasattr(config, "workerinput"):
        return
    tag = uuid.uuid4().hex
    watchdog = subprocess.Popen([sys.executable, __file__, tag], stdin=subprocess.PIPE, start_new_session=True)
    os.environ[TAG] = tag  # after the watchdog started: it does not stop itself


def pytest_unconfigure(config: pytest.Config) -> None:
    """The tests have ended: what is left of them is stopped now, and the watchdog with it."""
    if watchdog is not None and watchdog.stdin is not None:
        watchdog.stdin.close()
        watchdog.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
