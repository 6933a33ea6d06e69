"""CPU workers started only where a core is free for each: `workers: N` on a host whose cores are busy.

Each CPU worker is a pair of llama-servers whose threads spin at every barrier, beside its agent and the gradings: on
a host whose cores other processes already use, a second pair slows both (two workers on a busy 2-core host ran
0.89x the speed of one). The first worker always starts; each further one only when a core is free for it, counting
a core free when less than half of it is in use by the 1-minute load average over the cores this process may run on
(os.sched_getaffinity: a cpuset or taskset counts, a CPU quota does not). A worker not started is said in one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bench.config import BenchConfig
from bench.run.spelling import spelled_with


@dataclass(frozen=True)
class CoreLoad:
    """The cores this process may use and the host's 1-minute load average, read once."""

    cores: int
    load: float

    @classmethod
    def read(cls) -> CoreLoad | None:
        """This host's now; None where the system gives no load average."""
        try:
            load = os.getloadavg()[0]
        except OSError:
            return None
        return cls(len(os.sched_getaffinity(0)), load)

    def free(self) -> int:
        """Cores less than half in use: round(cores - load), not below 0."""
        return max(0, int(self.cores - self.load + 0.5))


def workers_to_start(asked: int, reading: CoreLoad | None) -> tuple[int, str | None]:
    """How many of `asked` CPU workers start under `reading` (at least one), and the line saying why the others do
    not (None: all start, or no reading to go by)."""
    if asked <= 1 or reading is None:
        return asked, None
    started = max(1, min(asked, reading.free()))
    if started == asked:
        return asked, None
    free = reading.free() or "none"
    return started, (
        f"{spelled_with('workers', asked)}: {started} started, not {asked}: {reading.cores} cores here at load "
        f"{reading.load:.1f} (1-minute average) leave {free} free, and each CPU worker needs a core of its own (its "
        f"servers' threads spin); {spelled_with('workers', started)} runs the same without this line, or run when the "
        "host is quieter"
    )


def fit_workers(config: BenchConfig, reading: CoreLoad | None = None) -> tuple[BenchConfig, list[str]]:
    """`config` with its CPU workers cut to the cores free (`reading`, else this host's now), and the line saying so
    when it cut them; one worker per GPU (`gpu_devices`) is left as it is."""
    if config.workers <= 1 or config.gpu_devices is not None:
        return config, []
    started, note = workers_to_start(config.workers, reading or CoreLoad.read())
    return config.model_copy(update={"workers": started}), [note] if note else []
