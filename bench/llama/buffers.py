"""llama-server's own account of the memory it allocates, read from its log: model, KV, compute and output buffers.

With `-lv 4` (llama.cpp's library logs at info level show only from verbosity 4) this build logs one line per buffer:

    load_tensors:        CUDA0 model buffer size = 11536.00 MiB
    llama_kv_cache:      CUDA0 KV buffer size =   192.00 MiB
    sched_reserve:       CUDA0 compute buffer size =   398.38 MiB
    llama_context:   CUDA_Host  output buffer size =     0.77 MiB

The buffer's name is its backend: `CUDA0` is memory on GPU 0, `CUDA_Host` pinned host memory, `CPU`/`CPU_Mapped`
host memory. The GPU self-check compares the sum on the GPU with what NVML reports for the process: NVML's figure
must be at least that, and above it by no more than the CUDA context.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

_BUFFER = re.compile(r"\b([A-Za-z][\w-]*)\s+(model|KV|compute|output|RS|LoRA) buffer size =\s+([\d.]+) MiB")
_GPU_BUFFER = re.compile(r"^(CUDA|ROCm|Vulkan|SYCL|MUSA)\d+$")


@dataclass(frozen=True)
class Buffer:
    backend: str  # CUDA0, CUDA_Host, CPU, CPU_Mapped, ...
    kind: str  # model, KV, compute, output, RS, LoRA
    mib: float


def buffers_in_log(log: str) -> list[Buffer]:
    """Every buffer line in a llama-server log, in order (a model with sliding-window layers has two KV lines)."""
    return [Buffer(m.group(1), m.group(2), float(m.group(3))) for m in _BUFFER.finditer(log)]


def on_gpu(buffers: list[Buffer]) -> dict[str, float]:
    """MiB per kind of buffer held in GPU memory (host and pinned-host buffers left out)."""
    totals: dict[str, float] = defaultdict(float)
    for buffer in buffers:
        if _GPU_BUFFER.match(buffer.backend):
            totals[buffer.kind] += buffer.mib
    return dict(totals)


# llama-server's memory breakdown (common/fit.cpp common_memory_breakdown_print, logged at -lv 4 when it exits, and
# while fitting at start): one row per device, `total = free + (self = model + context + compute) + unaccounted`,
# then the host and any other buffer type as `self = model + context + compute`. All MiB, rounded down.
_DEVICE_ROW = re.compile(
    r"\|\s+- (\S+) \((.*?)\)\s*\|\s*(\d+)\s*=\s*(\d+)\s*\+\s*\(\s*(\d+)\s*=\s*(\d+)\s*\+\s*(\d+)\s*\+\s*(\d+)\s*\)"
    r"\s*\+\s*(-?\d+)\s*\|"
)
_OTHER_ROW = re.compile(r"\|\s+- (\S+)\s*\|\s*(\d+)\s*=\s*(\d+)\s*\+\s*(\d+)\s*\+\s*(\d+)\s*\|")
_TABLE_HEAD = "memory breakdown [MiB]"


@dataclass(frozen=True)
class BreakdownRow:
    name: str  # CUDA0, Host, CPU_REPACK, ...
    self_mib: int  # model + context + compute
    model_mib: int
    context_mib: int
    compute_mib: int
    total_mib: int | None = None  # devices only: the card's memory, what is free, and what no buffer explains
    free_mib: int | None = None
    unaccounted_mib: int | None = None


def breakdown_in_log(log: str) -> list[BreakdownRow]:
    """The last memory breakdown in a log (the one printed at exit), or [] when there is none."""
    start = log.rfind(_TABLE_HEAD)
    if start < 0:
        return []
    rows = []
    for line in log[start:].splitlines()[1:]:
        if "common_memory_breakdown_print" not in line:
            break
        if found := _DEVICE_ROW.search(line):
            total, free, own, model, context, compute, unaccounted = map(int, found.groups()[2:])
            rows.append(
                BreakdownRow(
                    name=found.group(1),
                    self_mib=own,
                    model_mib=model,
                    context_mib=context,
                    compute_mib=compute,
                    total_mib=total,
                    free_mib=free,
                    unaccounted_mib=unaccounted,
                )
            )
        elif found := _OTHER_ROW.search(line):
            rows.append(BreakdownRow(found.group(1), *map(int, found.groups()[1:])))
    return rows
