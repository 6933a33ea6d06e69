"""The ways a run can end besides its own stop reasons, each turned into an exception the command line ends on:
one line for the person, and the trace's `stop` line (agent/cli.py).

- SIGTERM (the bench, a container stopping, `kill`) and SIGHUP (the terminal went away) end the run as Ctrl-C does:
  the exception unwinds through the running command (its session is killed, agent/shell.py), the done check's copy
  (removed, agent/check_copy.py) and the run's leftovers (ended, agent/reaper.py). Further signals of these kinds
  are ignored from then on, so that nothing cuts the cleanup short.
"""

from __future__ import annotations

import signal
from types import FrameType

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """The agent was sent SIGTERM or SIGHUP. A BaseException, as KeyboardInterrupt is: no `except Exception` of the
    run may take it for an error of its own."""

    def __init__(self, signum: int) -> None:
        self.name = signal.Signals(signum).name
        super().__init__(f"ended by {self.name}")


def end_on_signals() -> None:
    """From now on SIGTERM and SIGHUP raise Terminated in the main thread."""
    for signum in ENDING_SIGNALS:
        signal.signal(signum, _terminate)


def _terminate(signum: int, frame: FrameType | None) -> None:
    for other in ENDING_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    raise Terminated(signum)
