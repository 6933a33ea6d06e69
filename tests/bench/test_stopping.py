"""Workers that stop by asking (bench/stopping.py): a worker thread raises the stop asked of it itself, at its next
check, within POLL_S of a wait; never while it holds the stop (a finished run's row) or cleans up; outside a worker the
checks do nothing. The waits that last (a child process, a command, a blocking call) see it, and kill what they
started."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import stopping
from bench.errors import Terminated
from bench.processes import run_to_end
from bench.stopping import POLL_S, Stop, stoppable, unchecked

SOON_S = POLL_S + 1.0  # a stop asked is raised within a slice of the wait, with room for a busy machine


class Worker:
    """`body` in a thread under `stop`: what it raised, and when."""

    def __init__(self, stop: Stop, body: Callable[[], object]) -> None:
        self.raised: BaseException | None = None
        self.ended_at = 0.0
        self.started = threading.Event()

        def run() -> None:
            with stoppable(stop):
                self.started.set()
                try:
                    body()
                except BaseException as e:  # noqa: BLE001 - what the worker raised is the test's subject
                    self.raised = e
                finally:
                    self.ended_at = time.monotonic()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.started.wait(5)

    def stopped_by(self, stop: Stop, kind: type[BaseException]) -> float:
        """Ask the stop; the seconds until the worker ended."""
        asked_at = time.monotonic()
        stop.ask(kind)
        self.thread.join(30)
        assert not self.thread.is_alive()
        return self.ended_at - asked_at


def test_a_worker_raises_the_stop_asked_of_it_at_its_next_wait() -> None:
    stop = Stop()
    worker = Worker(stop, lambda: stopping.sleep(60))
    assert worker.stopped_by(stop, Terminated) < SOON_S
    assert type(worker.raised) is Terminated


def test_outside_a_worker_and_in_a_clean_up_nothing_is_raised() -> None:
    stopping.check()  # the main thread: not a worker
    stop = Stop()
    stop.ask(KeyboardInterrupt)
    steps: list[str] = []

    def body() -> None:
        with unchecked():  # a clean-up runs to its end
            stopping.check()
            stopping.sleep(0.01)
            steps.append("cleaned up")
        stopping.check()
        steps.append("after the check")

    worker = Worker(stop, body)
    worker.thread.join(5)
    assert steps == ["cleaned up"] and type(worker.raised) is KeyboardInterrupt


def test_a_held_stop_is_not_raised_and_its_waits_still_wait() -> None:
    held: list[tuple[int, type[BaseException]]] = []

    def hold(ident: int, kind: type[BaseException]) -> bool:
        held.append((ident, kind))
        return True

    stop = Stop(hold)
    stop.ask(Terminated)
    slept: list[float] = []

    def body() -> None:
        started = time.monotonic()
        for _ in range(3):
            stopping.sleep(0.1)
        slept.append(time.monotonic() - started)

    worker = Worker(stop, lambda: (body(), stopping.wait_call(body)))  # a call run for it holds it too
    worker.thread.join(5)
    assert worker.raised is None and len(slept) == 2 and min(slept) >= 0.3  # no busy loop while the row is written
    assert held and all(entry == (worker.thread.ident, Terminated) for entry in held)


def test_a_blocking_call_is_waited_for_in_slices() -> None:
    assert stopping.wait_call(lambda: 42) == 42  # outside a worker: called here
    with pytest.raises(ZeroDivisionError):
        stopping.wait_call(lambda: 1 / 0)
    stop, release = Stop(), threading.Event()
    answers: list[object] = []
    worker = Worker(stop, lambda: answers.append(stopping.wait_call(lambda: 1 / 0)))
    worker.thread.join(5)
    assert type(worker.raised) is ZeroDivisionError  # the call's own error, raised in the worker
    worker = Worker(stop, lambda: stopping.wait_call(lambda: release.wait(60)))
    assert worker.stopped_by(stop, KeyboardInterrupt) < SOON_S and type(worker.raised) is KeyboardInterrupt
    release.set()  # what it waited for ends (the caller's clean-up: a container removed)


def test_a_call_waited_for_runs_under_the_workers_stop() -> None:
    stop, ended = Stop(), threading.Event()

    def call() -> None:  # a server's preparation: its own waits check too (llama-bench's process, for one)
        try:
            stopping.sleep(60)
        finally:
            ended.set()

    worker = Worker(stop, lambda: stopping.wait_call(call))
    assert worker.stopped_by(stop, Terminated) < SOON_S and type(worker.raised) is Terminated
    assert ended.wait(SOON_S)


@pytest.mark.usefixtures("child_processes")
def test_a_stop_kills_the_agent_process_the_worker_waits_for(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    stop = Stop()
    worker = Worker(stop, lambda: run_to_end([sys.executable, "-c", script], cwd=tmp_path, env={}, timeout_s=120))
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert worker.stopped_by(stop, KeyboardInterrupt) < SOON_S and type(worker.raised) is KeyboardInterrupt
    assert not Path(f"/proc/{pid_file.read_text()}").exists()  # killed and reaped, not left behind


@pytest.mark.usefixtures("child_processes")
def test_a_command_is_run_as_subprocess_run_would_and_killed_on_a_stop(tmp_path: Path) -> None:
    done = stopping.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=30, env={"PATH": os.defpath})
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    with pytest.raises(subprocess.TimeoutExpired):
        stopping.run(["sleep", "30"], timeout_s=0.3)
    stop = Stop()
    worker = Worker(stop, lambda: stopping.run(["sleep", "61"], timeout_s=120))
    deadline = time.monotonic() + 30
    while not children("sleep\x0061"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert worker.stopped_by(stop, KeyboardInterrupt) < SOON_S and type(worker.raised) is KeyboardInterrupt
    assert not children("sleep\x0061")  # killed and reaped


def children(cmdline: str) -> list[Path]:
    """This process's children whose command line (NUL-separated) starts with `cmdline`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat, argv = (proc / "stat").read_text(), (proc / "cmdline").read_text()
        except OSError:  # gone meanwhile
            continue
        if int(stat[stat.rfind(")") + 2 :].split()[1]) == os.getpid() and argv.startswith(cmdline):
            found.append(proc)
    return found
