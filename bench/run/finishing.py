"""A stop that waits for a finished run's row: SIGTERM (scancel, the kubelet, a CI timeout), Ctrl-C, or the stop a
worker gets, that lands after a run's agent has ended and before its row is written is held until the row is written,
then raised. A run the agent finished is never lost to a stop that came a second late; one still running is cut
short at once, as before. The engines leave that time before they kill (Slurm's --signal, Kubernetes'
terminationGracePeriodSeconds: bench/submit/).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bench.errors import Terminated

log = logging.getLogger(__name__)


class Finishing:
    """The threads whose run is finished and whose row is not written yet, and the stops held for them."""

    def __init__(self) -> None:
        # Re-entrant: a signal handler runs in the main thread, possibly while that thread is inside this lock.
        self._lock = threading.RLock()
        self._threads: set[int] = set()
        self._held: dict[int, type[BaseException]] = {}
        self.stops = 0  # stops that reached the bench so far (a grading beside the next run compares: bench.run.grade)

    def stop_asked(self) -> None:
        """A stop (SIGTERM, Ctrl-C) reached the bench: a grading running now may have lost its pytest to it."""
        with self._lock:
            self.stops += 1

    def begin(self, ident: int | None = None) -> None:
        """The run of thread `ident` (by default the calling one) is finished (its agent has written its stop line, or
        ended): a stop now waits for its row."""
        with self._lock:
            self._threads.add(threading.get_ident() if ident is None else ident)

    def holding(self, ident: int | None) -> bool:
        """A stop is held for thread `ident` already."""
        with self._lock:
            return ident in self._held

    def stopped_since(self, stops: int) -> bool:
        """A stop is held for the calling thread, or one reached the bench since it counted `stops`: what a child
        process of this run failed at meanwhile (a grading pytest, a git) may have been ended by that stop."""
        return self.holding(threading.get_ident()) or self.stops != stops

    def hold(self, ident: int | None, stop: type[BaseException]) -> bool:
        """Hold `stop` for thread `ident` when it is writing a finished run's row (True: it is raised there once the
        row is written); False when that thread is not, and the caller stops it at once."""
        with self._lock:
            if ident not in self._threads:
                return False
            self._held.setdefault(ident, stop)
            return True

    @contextmanager
    def row(self) -> Iterator[None]:
        """Around one run and the writing of its row: a stop held meanwhile is raised once the row is written."""
        ident = threading.get_ident()
        try:
            yield
        finally:
            with self._lock:
                self._threads.discard(ident)
                held = self._held.pop(ident, None)
        if held is not None:  # reached only when the row was written: an error in between propagates as it is
            log.warning("stopped (%s) once the row of the run that had ended was written", held.__name__)
            raise held


FINISHING = Finishing()  # one per process: signals and the workers' stops reach it


def on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM's handler (`bench run`): Terminated, at once, or once the row of a run that has ended is written."""
    FINISHING.stop_asked()
    if not FINISHING.hold(threading.get_ident(), Terminated):
        raise Terminated


def on_sigint(signum: int, frame: object) -> None:
    """Ctrl-C's handler (`bench run`): KeyboardInterrupt at once, or, when the run had ended (its grading under way),
    once its row is written, as SIGTERM; a second Ctrl-C stops at once (that run's folder is marked interrupted)."""
    FINISHING.stop_asked()
    ident = threading.get_ident()
    if FINISHING.holding(ident) or not FINISHING.hold(ident, KeyboardInterrupt):
        raise KeyboardInterrupt
    log.warning("Ctrl-C: the run had ended; the bench stops once its row is written (Ctrl-C again: at once)")
