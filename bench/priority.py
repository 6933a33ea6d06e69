"""Work beside a measured run yields the CPU to it. Grading beside the next run (bench/run/gradings.py) lowers its own
thread's priority: Linux keeps a nice value per thread, and a process inherits the one of the thread that started it,
so the local grader's pytest runs lowered too. A grader container's processes are the engine's children, not ours:
it is given the CPU weight of the same nice value (`container_weight`). With the cores free, the lowered work runs at
full speed; with the next run's server busy, it takes what the server leaves, not the server's time.
"""

from __future__ import annotations

import os
import threading
from typing import Any

BACKGROUND_NICE = 10  # nice 10 weighs about a tenth of nice 0 for the scheduler
DEFAULT_WEIGHT = 1024  # the scheduler's weight at nice 0, which is Docker's default cpu_shares
WEIGHT_STEP = 1.25  # each nice step weighs about 1.25 times less


def lower_this_thread() -> None:
    """This thread, and every process it starts from now on, BACKGROUND_NICE below the rest of the bench."""
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _process_nice() + BACKGROUND_NICE)


def lowered_by() -> int:
    """How far this thread runs below the bench's main thread (0: not lowered)."""
    return max(0, os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) - _process_nice())


def container_weight() -> dict[str, Any]:
    """Container options giving a container started from this thread the CPU weight of its nice value: none when the
    thread is not lowered (the engine's default)."""
    lowered = lowered_by()
    if not lowered:
        return {}
    return {"cpu_shares": max(2, round(DEFAULT_WEIGHT / WEIGHT_STEP**lowered))}


def _process_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, os.getpid())  # the main thread's
