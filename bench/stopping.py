"""Workers that stop by asking (bench.run.workers): no exception is put into another thread; a worker raises it itself.

A worker thread runs under a Stop of its own (`stoppable`). When Ctrl-C or SIGTERM reaches the bench's main thread,
the coordinator asks every worker to stop (`Stop.ask`, with the exception it got), and each raises that exception at
the next place that checks (`check`), where its run is cut short as in a bench of one pair: its agent killed, its
folder marked, its servers stopped. The places: between a run's steps (bench.run.runner), and every wait that can
last, each of which waits in slices of POLL_S: the agent's process or a container (`wait_process`, `wait_call`), a
command such as `docker compose up` (`run`), and the polls of a server's /health or /slots (`sleep`). A stop is not
raised while a finished run's row is written (the Stop's `hold`: bench.run.finishing), nor in a clean-up that runs
under `unchecked` (a worker's servers stopped). Outside a worker (the main thread, where a real signal lands, as in a
bench of one pair) the checks do nothing.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
POLL_S = 0.2  # how soon a waiting worker sees a stop asked of it
_thread = threading.local()  # the Stop this thread checks, and the worker thread whose hold counts


def _never_held(ident: int, kind: type[BaseException]) -> bool:
    return False


class Stop:
    """A stop asked of one worker, and the exception it raises (KeyboardInterrupt, or Terminated for SIGTERM).

    `hold(thread id, exception)` says whether the worker holds the stop where it is, to raise it itself later (the
    row of a run whose agent has ended is written first: bench.run.finishing.Finishing.hold)."""

    def __init__(self, hold: Callable[[int, type[BaseException]], bool] = _never_held) -> None:
        self.asked = threading.Event()
        self.kind: type[BaseException] = KeyboardInterrupt
        self.hold = hold

    def ask(self, kind: type[BaseException]) -> None:
        self.kind = kind
        self.asked.set()


@contextmanager
def stoppable(stop: Stop, worker: int | None = None) -> Iterator[None]:
    """The calling thread checks `stop` from now on, for the worker thread `worker` (by default itself), whose hold
    counts: a call run for a worker (`wait_call`) holds the stop where the worker does."""
    _thread.stop, _thread.worker = stop, worker or threading.get_ident()
    try:
        yield
    finally:
        _thread.stop = None


@contextmanager
def unchecked() -> Iterator[None]:
    """A clean-up: it runs to its end, whatever is asked meanwhile (the stop is seen at the next check after it)."""
    stop = _current()
    _thread.stop = None
    try:
        yield
    finally:
        _thread.stop = stop


def _current() -> Stop | None:
    return getattr(_thread, "stop", None)


def check() -> None:
    """Raise the stop asked of this worker, unless it holds it for now."""
    stop = _current()
    if stop is not None and stop.asked.is_set() and not stop.hold(_thread.worker, stop.kind):
        raise stop.kind


def sleep(seconds: float) -> None:
    """time.sleep, ended early by a stop asked of this worker, which is then raised."""
    check()
    stop = _current()
    if stop is None or stop.asked.is_set():  # not a worker, or a stop held: a plain sleep, never a busy loop
        time.sleep(seconds)
    elif stop.asked.wait(seconds):
        check()


def wait_process(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """proc.wait(timeout_s) (subprocess.TimeoutExpired once it passes), checking for a stop every POLL_S."""
    deadline = time.monotonic() + timeout_s
    while True:
        check()
        try:
            return proc.wait(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise


def wait_call(call: Callable[[], T]) -> T:
    """What `call()` returns (or raises), checking for a stop every POLL_S while it blocks (Docker's wait for a
    container, an HTTP call with a long timeout). The call runs in a thread of its own under the same Stop: on a stop,
    its own checks end it, or the caller's clean-up ends what it waits for (a container removed ends Docker's wait,
    servers stopped end a request to them)."""
    stop, worker = _current(), getattr(_thread, "worker", None)
    if stop is None:
        return call()
    answer: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            with stoppable(stop, worker):
                answer.set_result(call())
        except BaseException as e:  # noqa: BLE001 - raised in the waiting worker, by answer.result()
            answer.set_exception(e)

    threading.Thread(target=run, name="stoppable-call", daemon=True).start()
    while True:
        try:
            return answer.result(timeout=POLL_S)
        except concurrent.futures.TimeoutError:
            check()


def run(command: list[str], *, timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s), checking for a stop every
    POLL_S: the command is killed when the stop is raised, as it is when its time is up."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                check()
                try:
                    stdout, stderr = proc.communicate(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:  # retried: communicate() loses no output
                    if time.monotonic() >= deadline:
                        raise
        except BaseException:
            proc.kill()  # waited for as the `with` ends
            raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
