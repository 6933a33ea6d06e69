"""The ways a run can end besides its own stop reasons, each turned into an exception the command line ends on:
one line for the person, and the trace's `stop` line (agent/cli.py).

- SIGTERM (the bench, a container stopping, `kill`) and SIGHUP (the terminal went away) end the run as Ctrl-C does:
  the exception unwinds through the running command (its session is killed, agent/shell.py), the done check's copy
  (removed, agent/check_copy.py) and the run's leftovers (ended, agent/reaper.py). Further signals of these kinds
  are ignored from then on, so that nothing cuts the cleanup short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The agent was sent SIGTERM or SIGHUP. A BaseException, as KeyboardInterrupt is: no `except Exception` of the
    run may take it for an error of its own."""

    def __init__(self, signum: int) -> None:
        self.name = signal.Signals(signum).name
        super().__init__(f"ended by {self.name}")


@contextlib.contextmanager
def ending_on_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise Terminated in the main thread; the handlers before are put back after
    (the agent may run inside another program, as in the tests)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    before = {signum: signal.getsignal(signum) for signum in ENDING_SIGNALS}
    for signum in ENDING_SIGNALS:
        signal.signal(signum, _terminate)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def _terminate(signum: int, frame: FrameType | None) -> None:
    for other in ENDING_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)
