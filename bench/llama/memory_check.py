"""One llama-server's GPU memory three ways, compared: NVML's per-process figure, the buffers its log names, and the
memory breakdown it prints when it exits; with the allowed excess measured, not assumed.

What NVML shows beyond llama.cpp's buffers is the CUDA context (driver state, kernel images), cuBLAS workspaces and
the CUDA backend's memory pool for temporaries, which grows at the first large batch. Two of these are measured:
a bare context on the same card (a probe process: bench.measure.cuda_probe) and the growth across a real request at
the chosen window. Their sum is the allowed excess; what lies beyond it (kernel images and cuBLAS handles, which a
bare context lacks) is printed as such. Failures: NVML below the buffers (it cannot miss memory llama.cpp says it
holds), and the log's buffers and the exit breakdown disagreeing (llama.cpp's two accounts of the same memory).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench.llama.buffers import BreakdownRow, breakdown_in_log, buffers_in_log, on_gpu
from bench.measure.cuda_probe import ProbeError, held
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler

AGREE_MIB = 2.0  # the breakdown rounds each part down to whole MiB; the buffer lines have two decimals


@dataclass(frozen=True)
class ServerMemory:
    role: str
    at_rest_mib: int | None  # NVML, this server's processes, after loading and before the request
    peak_mib: int | None  # NVML, the highest while the request ran
    buffers: dict[str, float]  # GPU buffers by kind, from the log
    breakdown: list[BreakdownRow]  # the exit breakdown's device rows (on the GPU)
    context_mib: int | None  # a bare CUDA context on the same card, measured in a probe process

    @classmethod
    def from_log(
        cls, role: str, log: str, at_rest_mib: int | None, peak_mib: int | None, context_mib: int | None
    ) -> ServerMemory:
        devices = [row for row in breakdown_in_log(log) if row.total_mib is not None]
        return cls(
            role=role,
            at_rest_mib=at_rest_mib,
            peak_mib=peak_mib,
            buffers=on_gpu(buffers_in_log(log)),
            breakdown=devices,
            context_mib=context_mib,
        )

    @property
    def buffers_mib(self) -> float:
        return sum(self.buffers.values())


def compare(memory: ServerMemory) -> tuple[str, str]:
    """(status, detail) for one server: "ok" or "FAIL", and every figure behind it."""
    if not memory.buffers:
        return "FAIL", "its log names no buffer on a GPU: it runs on the CPU (see `servers` above)"
    buffers = memory.buffers_mib
    parts = ", ".join(f"{kind} {mib:.0f}" for kind, mib in sorted(memory.buffers.items()))
    if memory.peak_mib is None or memory.at_rest_mib is None:
        return "FAIL", f"NVML shows no memory for its process; buffers {buffers:.0f} MiB ({parts})"
    problems = []
    if memory.peak_mib < buffers:
        problems.append(f"NVML's peak is below the buffers llama.cpp holds by {buffers - memory.peak_mib:.0f} MiB")
    own = sum(row.self_mib for row in memory.breakdown)
    if not memory.breakdown:
        problems.append("no memory breakdown at exit (it prints one at -lv 4 when stopped with SIGTERM)")
    elif abs(own - buffers) > AGREE_MIB + len(memory.buffers):
        problems.append(f"the exit breakdown says {own} MiB, the buffer lines {buffers:.0f} MiB")
    growth = memory.peak_mib - memory.at_rest_mib
    context = memory.context_mib
    allowed = None if context is None else context + max(growth, 0)
    excess = memory.peak_mib - buffers
    lines = [
        f"NVML peak {memory.peak_mib} MiB = buffers {buffers:.0f} MiB ({parts}) {excess:+.0f} MiB",
        f"at rest {memory.at_rest_mib} MiB, the request at the window added {growth:+d} MiB (pool, workspaces)",
        "bare CUDA context on this card: " + (f"{context} MiB" if context is not None else "not measured"),
        "allowed excess (context + growth, measured): "
        + (
            f"{allowed} MiB, actual {excess:.0f} MiB ({excess - allowed:+.0f} beyond it: kernel images, cuBLAS)"
            if allowed is not None
            else "unknown"
        ),
    ]
    if memory.breakdown:
        unaccounted = ", ".join(f"{row.name} {row.unaccounted_mib}" for row in memory.breakdown)
        lines.append(f"exit breakdown: self {own} MiB, unaccounted {unaccounted} MiB (all processes on the card)")
    return ("FAIL" if problems else "ok"), "; ".join(problems + lines)


def bare_context_mib(device: str, interval_s: float, checkout: Path) -> int | None:
    """What a CUDA context alone takes on the card, measured in a probe process started in `checkout` (this
    repository); None when it cannot be."""
    try:
        with held(0, device=device, cwd=str(checkout)) as probe:
            sampler = GpuSampler(PidMatcher({"flint": probe.caller_pid}), interval_s=interval_s)
            sampler.baseline()
            sampler.start()
            time.sleep(0.5)
            return sampler.stop().peak_role_mib.get("flint")
    except (ProbeError, OSError):
        return None
