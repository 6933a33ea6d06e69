"""The rehearsal's measuring steps (bench.rehearsal): each returns figures and never raises for GPU trouble."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bench.llama.cuda_compat import compression_floor, driver_cuda
from bench.measure.cost import measure_sampler_cost
from bench.measure.cuda_probe import Held, ProbeError
from bench.measure.nvml import NvmlCalls
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler

GIB, MIB = 2**30, 2**20
CALLS = 200  # each NVML call is timed this often
Holder = Callable[..., contextlib.AbstractContextManager[Held]]


@dataclass
class Figure:
    """One measured figure (or a finding): every step hands each one on as soon as it has it (Emit)."""

    step: str
    name: str
    value: Any
    status: str = "info"  # info, ok, FAIL, skipped
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


Emit = Callable[[Figure], None]


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def attempt(step: str, name: str, call: Callable[[], Any]) -> Figure:
    """One NVML call as a figure: its value, or the error it raised."""
    try:
        return Figure(step, name, call())
    except Exception as e:  # every failure is a finding here
        return Figure(step=step, name=name, value=None, status="FAIL", detail=f"{type(e).__name__}: {e}")


def handles(nvml: ModuleType) -> list[Any]:
    return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]


def gpu_facts(nvml: ModuleType, handle: Any) -> dict[str, Callable[[], Any]]:
    return {
        "name": lambda: text(nvml.nvmlDeviceGetName(handle)),
        "uuid": lambda: text(nvml.nvmlDeviceGetUUID(handle)),
        "memory MiB": lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total // MIB,
        "compute capability": lambda: nvml.nvmlDeviceGetCudaComputeCapability(handle),
        "MIG mode (current, pending)": lambda: nvml.nvmlDeviceGetMigMode(handle),
        "MIG instances": lambda: mig_instances(nvml, handle),
        "accounting mode": lambda: nvml.nvmlDeviceGetAccountingMode(handle),
        # the counter the runs' gpu_energy_j is made of (bench/measure/sampler.py), read on a real card
        "energy counter mJ": lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle),
    }


def inventory(nvml: ModuleType, emit: Emit) -> None:
    emit(attempt("inventory", "driver, newest CUDA it runs", lambda: driver_cuda(nvml)))

    # whether this driver is one llama.cpp's default kernel compression (CUDA 12.8+) would fail on: the day's own
    # build passes -compress-mode=speed (bench/llama/cuda_compat.py), so its kernels running here on such a driver
    # would show the floor avoided
    def floor() -> str:
        return compression_floor((12, 9), "size", driver_cuda(nvml)[0]) or "loads it"

    emit(attempt("inventory", "driver vs -compress-mode=size (CUDA 12.8+)", floor))
    for index, handle in enumerate(handles(nvml)):
        for name, call in gpu_facts(nvml, handle).items():
            emit(attempt("inventory", f"gpu{index} {name}", call))
    for figure in runtimes():
        emit(figure)


def mig_instances(nvml: ModuleType, handle: Any) -> list[str]:
    """The UUIDs of a GPU's MIG instances (none on a GPU without MIG)."""
    found: list[str] = []
    try:
        slots = nvml.nvmlDeviceGetMaxMigDeviceCount(handle)
    except nvml.NVMLError:  # a GPU without MIG support
        return found
    for slot in range(slots):
        with contextlib.suppress(nvml.NVMLError):
            found.append(text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot))))
    return found


def run_text(args: list[str]) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"({e})"
    return (done.stdout.strip() or done.stderr.strip())[-400:]


def runtimes() -> list[Figure]:
    docker = shutil.which("docker")
    figures = [Figure("inventory", "python", sys.version.split()[0])]
    if docker is None:
        return [*figures, Figure(step="inventory", name="docker", value=None, status="info", detail="no docker client")]
    return [
        *figures,
        Figure("inventory", "docker runtimes", run_text([docker, "info", "--format", "{{json .Runtimes}}"])),
        Figure("inventory", "nvidia-container-cli", shutil.which("nvidia-container-cli") or ""),
        Figure(
            "inventory",
            "local llama/cuda images",
            [
                line
                for line in run_text([docker, "images", "--format", "{{.Repository}}:{{.Tag}}"]).splitlines()
                if "llama" in line or "cuda" in line
            ],
        ),
    ]


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """The call's result and its median time in microseconds over CALLS calls."""
    result, times = None, []
    for _ in range(CALLS):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return result, statistics.median(times) * 1e6


def sampler_calls(nvml: ModuleType, uuid: str, handle: Any) -> dict[str, Callable[[], Any]]:
    """The calls bench.measure.nvml makes for a sample, each returning what it read."""
    return {
        "memory v1 used MiB": lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used // MIB,
        "memory v2 used MiB": lambda: nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2).used // MIB,
        "processes v3": lambda: len(nvml.nvmlDeviceGetComputeRunningProcesses_v3(handle)),
        "processes v2": lambda: len(nvml.nvmlDeviceGetComputeRunningProcesses_v2(handle)),
        "handle by UUID": lambda: text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByUUID(uuid))) == uuid,
    }


def nvml_calls(nvml: ModuleType, emit: Emit) -> None:
    """The sampler's calls on every GPU (and MIG instance), each with its value and median time."""
    for handle in handles(nvml):
        uuid = text(nvml.nvmlDeviceGetUUID(handle))
        targets = [(uuid, handle)] + [(m, nvml.nvmlDeviceGetHandleByUUID(m)) for m in mig_instances(nvml, handle)]
        for name, target in targets:
            for label, call in sampler_calls(nvml, name, target).items():
                try:
                    value, micros = timed(call)
                    emit(
                        Figure(
                            step="nvml calls",
                            name=f"{name[:12]} {label}",
                            value=value,
                            status="ok",
                            detail=f"{micros:.1f} µs",
                        )
                    )
                except Exception as e:  # e.g. NoPermission on a MIG instance, FunctionNotFound on old drivers
                    emit(
                        Figure(
                            step="nvml calls",
                            name=f"{name[:12]} {label}",
                            value=None,
                            status="FAIL",
                            detail=f"{type(e).__name__}: {e}",
                        )
                    )


def held_reading(
    holder: Holder, n_bytes: int, depth: int, uuid: str, interval_s: float, nvml: ModuleType, hold_s: float
) -> tuple[Any, int]:
    """The sampler around a probe holding `n_bytes`: (its reading, the device's use before the probe started), on a
    started NVML (the real one, or a test's)."""
    before = NvmlCalls(nvml).used_bytes(nvml.nvmlDeviceGetHandleByUUID(uuid)) // MIB
    with holder(n_bytes, depth=depth, device=uuid) as probe:
        sampler = GpuSampler(
            PidMatcher({"flint": probe.caller_pid}), device_uuids=[uuid], interval_s=interval_s, nvml=nvml
        )
        sampler.baseline()
        sampler.start()
        time.sleep(max(hold_s, 5 * interval_s))
        return sampler.stop(), before


def allocations(
    holder: Holder,
    uuid: str,
    sizes_gib: list[int],
    free_mib: int,
    interval_s: float,
    nvml: ModuleType,
    emit: Emit,
    hold_s: float = 1.0,
) -> int | None:
    """A bare context, then each size in a child and a grandchild: the sampler's figures against the known bytes, and
    the device's own delta (NVML's device memory before and at the peak). Returns the bare context's MiB."""
    try:
        bare, _ = held_reading(
            holder=holder, n_bytes=0, depth=1, uuid=uuid, interval_s=interval_s, nvml=nvml, hold_s=hold_s
        )
    except ProbeError as e:
        emit(
            Figure(
                step="allocation", name="bare CUDA context", value=None, status="FAIL", detail=f"the probe failed: {e}"
            )
        )
        return None
    context = bare.peak_role_mib["flint"]
    emit(
        Figure(
            step="allocation",
            name="bare CUDA context MiB",
            value=context,
            status="ok" if context else "FAIL",
            detail=bare.method,
        )
    )
    for size in sizes_gib:
        for depth, who in ((1, "child"), (2, "grandchild")):
            name = f"{size} GiB in a {who}"
            if size * 1024 > 0.9 * free_mib:
                emit(Figure(step="allocation", name=name, value=None, status="skipped", detail=f"{free_mib} MiB free"))
                continue
            try:
                reading, before = held_reading(
                    holder=holder,
                    n_bytes=size * GIB,
                    depth=depth,
                    uuid=uuid,
                    interval_s=interval_s,
                    nvml=nvml,
                    hold_s=hold_s,
                )
            except ProbeError as e:
                emit(Figure(step="allocation", name=name, value=None, status="FAIL", detail=str(e)))
                continue
            emit(allocation_figure(name=name, size_gib=size, context=context, reading=reading, before=before))
    return context


def allocation_figure(name: str, size_gib: int, context: int | None, reading: Any, before: int) -> Figure:
    """One allocation's figure: the sampler's per-process peak against the known bytes, and the device delta."""
    seen = reading.peak_role_mib["flint"]
    device = None if reading.peak_device_mib is None else reading.peak_device_mib - before
    over = None if seen is None else seen - size_gib * 1024
    status = "ok" if over is not None and over >= 0 else "FAIL"
    detail = (
        f"sampler {seen} MiB = {size_gib * 1024} {over:+} (context {context}); device +{device} MiB"
        if seen is not None
        else reading.method
    )
    return Figure(
        step="allocation",
        name=name,
        value=seen,
        status=status,
        detail=detail,
        extra={"device_delta_mib": device, "samples": reading.samples},
    )


def sampler_costs(nvml: ModuleType, uuids: list[str], interval_s: float, seconds: float, emit: Emit) -> None:
    for name, watched in (("one card", uuids[:1]), ("every card", None)):
        cost = measure_sampler_cost(interval_s, seconds, nvml, watched)
        status = "ok" if cost.measured and cost.cpu_percent <= 2.0 else "FAIL"
        detail = f"{cost.samples_per_s:.1f} samples/s over {cost.gpus} GPU(s) at {interval_s} s; {cost.method}"
        emit(
            Figure(
                step="sampler cost",
                name=f"CPU % of one core, {name}",
                value=round(cost.cpu_percent, 3),
                status=status,
                detail=detail,
            )
        )
