"""What the NVML sampler costs: its sample rate and its own thread's CPU time, measured by running it.

Used by `make gpu-check`, `make gpu-rehearsal` and `make perf` (perf/gpu_sampler.py), so each reports the same figure.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from types import ModuleType

from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler


@dataclass(frozen=True)
class SamplerCost:
    samples_per_s: float
    cpu_percent: float  # the sampler thread's CPU time, as a share of one core
    measured: bool
    method: str
    gpus: int = 0  # how many GPUs it watched


def measure_sampler_cost(
    interval_s: float, seconds: float, nvml: ModuleType | None = None, device_uuids: list[str] | None = None
) -> SamplerCost:
    """Run the sampler on this process for `seconds` (on `device_uuids`, else every GPU): its rate and CPU cost."""
    sampler = GpuSampler(
        PidMatcher({"flint": os.getpid()}), device_uuids=device_uuids, interval_s=interval_s, nvml=nvml
    )
    sampler.baseline()
    started = time.monotonic()
    sampler.start()
    time.sleep(seconds)
    reading = sampler.stop()
    wall_s = time.monotonic() - started
    gpus = len(reading.gpu_uuid.split(";")) if reading.gpu_uuid else 0
    return SamplerCost(
        samples_per_s=reading.samples / wall_s,
        cpu_percent=100 * sampler.thread_cpu_s / wall_s,
        measured=reading.measured,
        method=reading.method,
        gpus=gpus,
    )
