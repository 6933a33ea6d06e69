"""Each step of the rehearsal under a deadline of its own, inside the whole's: a step runs in a daemon thread and is
given up when its time is up (recorded as such), so one stalled call (an NVML call stuck in the driver, a probe
that never gets ready) costs that step's deadline, never the 10-minute command and the figures after it. Steps that
start processes are given the deadline too and bound their own waits by it (bench.measure.cuda_probe, the build,
the server)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bench.rehearsal.record import Recorder
from bench.rehearsal.steps import Figure

Step = Callable[[float], None]  # called with its deadline (a time.monotonic() value)


def run_step(recorder: Recorder, name: str, step: Step, seconds: float) -> str:
    """Run `step` with `seconds` to go: "ok", "FAIL" (it raised: a finding, recorded) or "deadline" (given up)."""
    started = time.monotonic()
    deadline = started + seconds
    outcome: list[str] = []

    def body() -> None:
        try:
            step(deadline)
            outcome.append("ok")
        except Exception as e:  # every failure is a finding here
            recorder.emit(
                Figure(step=name, name="step", value=None, status="FAIL", detail=f"{type(e).__name__}: {e}"[:400])
            )
            outcome.append("FAIL")

    worker = threading.Thread(target=body, name=f"rehearsal-{name}", daemon=True)
    worker.start()
    worker.join(seconds)
    status = outcome[0] if outcome else "deadline"
    if status == "deadline":
        recorder.emit(
            Figure(
                step=name,
                name="deadline",
                value=round(seconds, 1),
                status="FAIL",
                detail=f"still running after {seconds:.0f} s: given up",
            )
        )
    recorder.step(name, time.monotonic() - started, status)
    return status


class Budget:
    """The whole rehearsal's time: each step gets its share, never more than what is left."""

    def __init__(self, total_s: float) -> None:
        self.total_s = total_s
        self.started = time.monotonic()

    def left(self) -> float:
        return self.total_s - (time.monotonic() - self.started)

    def deadline(self, keep_s: float = 0.0) -> float:
        """The time.monotonic() value at which the whole's budget ends, less `keep_s`."""
        return self.started + self.total_s - keep_s

    def share(self, wanted_s: float, keep_s: float = 0.0) -> float:
        """`wanted_s`, or what is left once `keep_s` is kept for the steps after."""
        return max(0.0, min(wanted_s, self.left() - keep_s))
