"""Benchmark (not a test): the CPU the GPU-memory sampler costs at a few sample intervals.

Uses the real NVML where it finds a GPU, else the scripted fake bench/testing/fake_pynvml.py (or always the fake with
--fake). For each interval it prints the samples per second and the sampler thread's CPU time as a percentage of one
core, and exits 1 when the default interval costs more than its target: 2% of one core with the real NVML, 1% with
the fake.

    python perf/gpu_sampler.py [--seconds 3] [--fake]
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType

from bench.measure.cost import measure_sampler_cost
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State
from perf.figures import Figure, figure

DEFAULT_INTERVAL_S = 0.1
INTERVALS_S = (DEFAULT_INTERVAL_S, 0.05, 0.25)
TARGET_PERCENT = {"real NVML": 2.0, "fake NVML": 1.0}


def real_nvml() -> ModuleType | None:
    """pynvml when a driver answers and sees a GPU, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception:  # no library, no driver: measure with the fake instead
        return None
    return pynvml if count > 0 else None


def fake_nvml() -> FakeNvml:
    """One GPU holding two servers and a stranger, so every sample walks a realistic process list."""
    busy = State(used=20 * GIB, processes=[(os.getpid(), 14 * GIB), (os.getpid() + 1, 5 * GIB), (1, GIB)])
    return FakeNvml([FakeDevice("GPU-fake-0", [busy])])


def measure(nvml: ModuleType, interval_s: float, seconds: float) -> tuple[float, float]:
    """Run the sampler for `seconds`; return (samples per second, sampler CPU as % of one core)."""
    cost = measure_sampler_cost(interval_s, seconds, nvml)
    if not cost.measured:
        raise SystemExit(f"gpu_sampler: the sampler measured nothing: {cost.method}")
    return cost.samples_per_s, cost.cpu_percent


def figures(quick: bool) -> list[Figure]:
    """The sampler's CPU at 20 Hz with the fake NVML (target 1% of a core), and with the real one where a GPU is."""
    seconds, repeats = (0.5, 1) if quick else (3.0, 3)
    found: list[tuple[str, ModuleType]] = [("fake NVML", fake_nvml())]
    real = real_nvml()
    if real is not None:
        found.append(("real NVML", real))
    out = []
    for kind, nvml in found:
        samples = [measure(nvml, 0.05, seconds)[1] for _ in range(repeats)]
        out.append(
            figure(f"GPU sampler CPU at 20 Hz, {kind}", "% of a core", samples, f"<= {TARGET_PERCENT[kind]}", quick)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="how long to sample at each interval")
    parser.add_argument("--fake", action="store_true", help="use the scripted fake NVML even where a GPU exists")
    args = parser.parse_args(argv)
    real = None if args.fake else real_nvml()
    kind, nvml = ("real NVML", real) if real is not None else ("fake NVML", fake_nvml())
    cost_at_default = 0.0
    for interval_s in INTERVALS_S:
        rate, cpu_percent = measure(nvml, interval_s, args.seconds)
        print(f"{kind}: interval {interval_s:.3f} s  {rate:6.1f} samples/s  sampler CPU {cpu_percent:.3f}% of one core")
        if interval_s == DEFAULT_INTERVAL_S:
            cost_at_default = cpu_percent
    target = TARGET_PERCENT[kind]
    verdict = "within" if cost_at_default <= target else "OVER"
    print(f"{kind}: {cost_at_default:.3f}% at {DEFAULT_INTERVAL_S} s is {verdict} the target of {target}% of one core")
    return 0 if cost_at_default <= target else 1


if __name__ == "__main__":
    sys.exit(main())
