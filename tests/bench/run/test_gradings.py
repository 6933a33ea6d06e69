"""Grading beside the next run (bench/run/gradings.py): rows in the order runs ended, the lane bounded, a stop waiting
for the gradings in flight (a further one ending them), a failure of the grading thread raised in the worker."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from bench import stopping
from bench.priority import lowered_by
from bench.run.gradings import Finished, Gradings
from bench.run.record import RunRecord


class Record:
    """What Gradings reads of a RunRecord: its id."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id


def finished(run_id: str, grade: object = None) -> Finished:
    return Finished(Record(run_id), (run_id, run_id), grade)  # type: ignore[arg-type]


class Lane:
    """A Gradings whose rows are written to a list, with each writing thread."""

    def __init__(self, tmp_path: Path, *, overlap: bool = True) -> None:
        self.rows: list[tuple[str, str]] = []
        self.gradings = Gradings(self.write, tmp_path, overlap=overlap)

    def write(self, record: RunRecord, names: tuple[str, str]) -> None:
        self.rows.append((record.run_id, threading.current_thread().name))


def sleeping(seconds: float, log: list[str]) -> object:
    def grade(record: RunRecord) -> None:
        log.append(f"start {record.run_id}")
        stopping.sleep(seconds)  # a stop asked of the grading thread ends it, as it ends a grading's pytest
        log.append(f"end {record.run_id}")

    return grade


def test_gradings_run_beside_the_caller_and_rows_come_in_the_order_runs_ended(tmp_path: Path) -> None:
    lane, log = Lane(tmp_path), list[str]()
    started = time.monotonic()
    lane.gradings.submit(finished("r1", sleeping(0.5, log)))
    handed_over = time.monotonic() - started
    lane.gradings.submit(finished("r2"))  # nothing to grade: still written after r1's row
    lane.gradings.submit(finished("r3", sleeping(0.1, log)))
    lane.gradings.drain(stopped=False)
    assert handed_over < 0.3  # the caller went on while r1 was graded
    assert [run for run, _ in lane.rows] == ["r1", "r2", "r3"]
    assert {thread for _, thread in lane.rows} == {"gradings"}
    assert log == ["start r1", "end r1", "start r3", "end r3"]


def test_each_grading_logs_its_own_time_and_a_run_with_nothing_to_grade_none(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lane, log = Lane(tmp_path), list[str]()
    with caplog.at_level("DEBUG", logger="bench.run.gradings"):
        lane.gradings.submit(finished("r1", sleeping(0.3, log)))
        lane.gradings.submit(finished("r2"))
        lane.gradings.drain(stopped=False)
    graded = [r.getMessage() for r in caplog.records if r.getMessage().startswith("graded")]
    assert len(graded) == 1 and graded[0].startswith("graded r1 in ")
    assert 0.3 <= float(graded[0].split()[-2]) < 5


def test_a_run_that_ends_while_two_wait_waits_for_room(tmp_path: Path) -> None:
    lane, release = Lane(tmp_path), threading.Event()
    lane.gradings.submit(finished("r1", lambda record: release.wait(5)))
    started = time.monotonic()
    threading.Timer(0.4, release.set).start()
    lane.gradings.submit(finished("r2"))  # one grading in flight at most: this waits for r1's
    assert time.monotonic() - started >= 0.35
    lane.gradings.drain(stopped=False)
    assert [run for run, _ in lane.rows] == ["r1", "r2"]


def test_without_overlap_each_run_is_graded_and_written_before_the_caller_goes_on(tmp_path: Path) -> None:
    lane, log = Lane(tmp_path, overlap=False), list[str]()
    lane.gradings.submit(finished("r1", sleeping(0.1, log)))
    assert log == ["start r1", "end r1"] and lane.rows == [("r1", threading.current_thread().name)]
    lane.gradings.drain(stopped=False)


def test_a_failure_of_the_grading_thread_is_raised_in_the_worker_and_the_waiting_runs_are_marked(
    tmp_path: Path,
) -> None:
    class Full(OSError):
        pass

    def refused(record: RunRecord) -> None:
        time.sleep(0.3)
        raise Full("no space left on device")

    lane = Lane(tmp_path)
    lane.gradings.depth = 2
    (tmp_path / "r2").mkdir()  # its run folder, renamed when it is cut short
    lane.gradings.submit(finished("r1", refused))
    lane.gradings.submit(finished("r2"))
    with pytest.raises(Full):
        lane.gradings.drain(stopped=False)
    assert lane.rows == [] and (tmp_path / "r2.interrupted").exists()


def test_a_ctrl_c_during_the_drain_after_a_stop_ends_the_grading_at_once(tmp_path: Path) -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("Ctrl-C lands in the main thread, and this test runs in another")
    lane, log = Lane(tmp_path), list[str]()
    lane.gradings.depth = 2
    (tmp_path / "r2").mkdir()
    lane.gradings.submit(finished("r1", sleeping(30, log)))
    lane.gradings.submit(finished("r2"))
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C raises, as in `bench run`
    try:
        threading.Timer(0.5, _thread.interrupt_main).start()  # Ctrl-C, as the terminal sends it
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            lane.gradings.drain(stopped=True)  # the first stop cut the next run short: this one ends the grading
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 5
    assert log == ["start r1"] and lane.rows == []
    assert (tmp_path / "r2.interrupted").exists()


def test_gradings_beside_the_next_run_run_lowered_and_serial_ones_do_not(tmp_path: Path) -> None:
    seen: dict[str, int] = {}

    def grade(record: RunRecord) -> None:
        seen[record.run_id] = lowered_by()

    beside, serial = Lane(tmp_path), Lane(tmp_path, overlap=False)
    beside.gradings.submit(finished("beside", grade))
    beside.gradings.drain(stopped=False)
    serial.gradings.submit(finished("serial", grade))
    serial.gradings.drain(stopped=False)
    assert seen["serial"] == 0 and seen["beside"] > 0
    assert seen["beside"] == min(10, 19 - os.getpriority(os.PRIO_PROCESS, 0))  # less only under a `nice` of 10 or more
