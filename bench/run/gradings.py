"""Grading beside the next run: a finished run's hidden tests need no server, so with `grading_overlap` a thread of
the worker's own grades them while the next run's agent works, and writes each row in the order the runs ran. That
thread yields the CPU to the run being measured (bench/priority.py): the next run's figures are its own.

The lane is bounded (`depth` finished runs wait or are graded at most): a run that ends while its predecessor is still
graded waits for room, so gradings never pile up. A stop (Ctrl-C, SIGTERM, a worker's stop) cuts the running agent
short as before (bench.run.finishing), then waits for the gradings in flight and writes their rows (`drain`); a
further stop during that wait ends them at once, their folders marked cut short. An error of the grading thread (a
full disk under the results file) is raised in the worker at its next hand-over, or at the drain.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import stopping
from bench.priority import lower_this_thread
from bench.run.finishing import FINISHING
from bench.run.outputs import mark_interrupted
from bench.run.record import RunRecord

log = logging.getLogger(__name__)
ABORT_WAIT_S = 30.0  # how long a stopped grading may take to end its processes


@dataclass(frozen=True)
class Finished:
    """A run whose agent has ended: its record, the names the display gives it (bench.run.progress), and its grading
    (None: nothing to grade, the row goes as it is)."""

    record: RunRecord
    names: tuple[str, str]
    grade: Callable[[RunRecord], None] | None = None


class Gradings:
    """The finished runs of one worker, graded (beside the next run, or at once) and written in order by `write`."""

    def __init__(
        self, write: Callable[[RunRecord, tuple[str, str]], None], runs_dir: Path, *, overlap: bool, depth: int = 1
    ) -> None:
        self.write, self.runs_dir, self.overlap, self.depth = write, runs_dir, overlap, depth
        self.waiting: collections.deque[Finished] = collections.deque()  # the first is being graded
        self.changed = threading.Condition()
        self.failure: BaseException | None = None
        self.stop = stopping.Stop()  # the grading thread's own: asked when a drain is cut short
        self.thread: threading.Thread | None = None
        self.done = threading.Event()  # set when the thread has ended (Thread.join cut short by Ctrl-C can lie)
        self.closed = False

    def submit(self, finished: Finished) -> None:
        """Hand over a finished run: graded and written here (no overlap), else by the grading thread once there is
        room (waited for here, a worker's stop seen meanwhile)."""
        if not self.overlap:
            self._finish(finished)
            return
        with self.changed:
            while self.failure is None and len(self.waiting) >= self.depth:
                self.changed.wait(stopping.POLL_S)
                stopping.check()
            self._raise_failure()
            self.waiting.append(finished)
            self.changed.notify_all()
        if self.thread is None:
            self.thread = threading.Thread(target=self._work, name="gradings", daemon=True)
            self.thread.start()

    def drain(self, stopped: bool) -> None:
        """Wait until every run handed over is graded and written. `stopped`: a stop is already under way (its
        running agent was cut short): any stop now ends the gradings at once; else a first stop waits for them as it
        waits for a finished run's row (bench.run.finishing)."""
        with self.changed:
            self.closed = True
            self.changed.notify_all()
            pending = len(self.waiting)
        if self.thread is None:
            return
        if stopped and pending:
            log.warning("stopping once %d finished run(s) are graded and written (a stop again: at once)", pending)
        try:
            with FINISHING.row():
                if not stopped:
                    FINISHING.begin()
                while not self.done.wait(stopping.POLL_S):
                    pass
        except BaseException as e:
            self._abort(type(e))
            raise
        self._raise_failure()

    def _finish(self, finished: Finished) -> None:
        if finished.grade is not None:
            started = time.monotonic()
            finished.grade(finished.record)
            # the grading's own time in the log: what overlapping can hide (perf/grading_overlap.py)
            log.debug("graded %s in %.2f s", finished.record.run_id, time.monotonic() - started)
        self.write(finished.record, finished.names)

    def _work(self) -> None:
        lower_this_thread()  # the next run is being measured: its server and agent come first (bench/priority.py)
        try:
            with stopping.stoppable(self.stop):
                while (finished := self._next()) is not None:
                    self._finish(finished)
                    with self.changed:
                        self.waiting.popleft()
                        self.changed.notify_all()
        except BaseException as e:  # noqa: BLE001 - raised in the worker (submit, drain)
            with self.changed:
                self.failure = e
                if self.waiting:  # its grading marked its folder, or its row was refused
                    self.waiting.popleft()
                self._mark_waiting()
                self.changed.notify_all()
        finally:
            self.done.set()

    def _next(self) -> Finished | None:
        with self.changed:
            while not self.waiting and not self.closed:
                self.changed.wait()
            return self.waiting[0] if self.waiting else None

    def _abort(self, kind: type[BaseException]) -> None:
        """A stop during the drain: the grading in flight ends its processes; the runs not graded are marked."""
        self.stop.ask(kind)
        self.done.wait(ABORT_WAIT_S)
        with self.changed:
            self._mark_waiting()

    def _mark_waiting(self) -> None:
        for finished in self.waiting:
            mark_interrupted(self.runs_dir / finished.record.run_id)
        self.waiting.clear()

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure
