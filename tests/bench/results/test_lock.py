"""One bench per results file: a second bench given the same --out is refused in one line, while the first lives,
however the first ends (SIGKILL included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.errors import ResultsError
from bench.results.lock import ResultsLock

HOLD = (
    "import sys, time\nfrom pathlib import Path\nfrom bench.results.lock import ResultsLock\n"
    "ResultsLock(Path(sys.argv[1])).acquire()\nprint('held', flush=True)\ntime.sleep(300)\n"
)


def test_a_second_holder_is_refused_in_one_line_naming_the_first(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    first = ResultsLock(out)
    first.acquire()
    with pytest.raises(ResultsError) as refused:
        ResultsLock(out).acquire()
    message = str(refused.value)
    assert "\n" not in message and f"pid {os.getpid()}" in message and "another --out" in message
    first.release()
    again = ResultsLock(out)
    again.acquire()  # free once released
    again.release()


@pytest.mark.usefixtures("child_processes")
def test_a_killed_holder_lets_go_of_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(ResultsError, match=f"pid {holder.pid}"):
        ResultsLock(out).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    holder.stdout.close()
    lock = ResultsLock(out)
    lock.acquire()
    lock.release()


def test_a_link_to_the_same_file_takes_the_same_lock(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    (tmp_path / "other").mkdir()
    link = tmp_path / "other" / "r.csv"
    link.symlink_to(out)
    first = ResultsLock(out)
    first.acquire()
    for spelling in (link, tmp_path / "other" / ".." / "results.csv"):
        with pytest.raises(ResultsError, match=f"pid {os.getpid()}"):
            ResultsLock(spelling).acquire()
    first.release()


def test_no_lock_file_is_left_and_an_empty_file_the_bench_created_goes_again(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    first = ResultsLock(out)
    first.acquire()
    with pytest.raises(ResultsError):
        ResultsLock(out).acquire()  # refused
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv"]  # no *.lock beside it
    first.release()
    assert list(tmp_path.iterdir()) == []  # created, never written: removed
    out.write_bytes(b"run_id\r\n")
    kept = ResultsLock(out)
    kept.acquire()
    kept.release()
    assert out.read_bytes() == b"run_id\r\n"  # a file the lock did not create is never touched
