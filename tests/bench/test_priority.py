"""Work beside a measured run yields the CPU (bench/priority.py): a lowered thread, the processes it starts, and the
container weight it asks for; the rest of the bench untouched."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

from bench.priority import container_weight, lower_this_thread, lowered_by


def in_a_thread(work: Callable[[], Any]) -> Any:
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(work()))
    thread.start()
    thread.join()
    return results[0]


def lowered_then(work: Callable[[], Any]) -> Any:
    def both() -> Any:
        lower_this_thread()
        return work()

    return in_a_thread(both)


def child_nice() -> int:
    code = "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def room() -> int:
    """How far below the bench a thread can go: 10, or less where the bench itself runs under `nice`."""
    return min(10, 19 - os.getpriority(os.PRIO_PROCESS, 0))


def test_a_lowered_thread_runs_ten_below_and_asks_the_container_weight_of_its_nice_value() -> None:
    assert lowered_then(lowered_by) == room()
    weights = {10: 110, 9: 137, 5: 335}  # the scheduler's weights for nice 10, 9 and 5 against 1024 at nice 0
    if room() in weights:
        assert lowered_then(container_weight) == {"cpu_shares": weights[room()]}


@pytest.mark.usefixtures("child_processes")
def test_the_processes_a_lowered_thread_starts_run_lowered_and_the_others_do_not() -> None:
    own = child_nice()
    assert lowered_then(child_nice) == own + room()
    assert child_nice() == own  # the main thread was not lowered with it


def test_threads_not_lowered_ask_nothing_of_the_engine() -> None:
    lowered_then(lambda: None)
    assert lowered_by() == 0
    assert container_weight() == {}
    assert in_a_thread(container_weight) == {}
