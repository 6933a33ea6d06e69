"""On a machine with an NVIDIA GPU: the sampler sees a known allocation made by this very process.

The test allocates 10 GiB (with PyTorch, or with the CUDA driver API through ctypes where PyTorch is missing), holds
it for 0.5 s and frees it, with a GpuSampler around it that knows this process as "flint". Run it with `-s` to see
the figures docs/gpu.md quotes: the peaks, the baseline, the samples and the sampler thread's CPU cost.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import time
import warnings
from collections.abc import Callable, Iterator

import pytest

from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler

pytestmark = pytest.mark.gpu

ALLOCATION = 10 * 2**30
ALLOCATION_MIB = ALLOCATION // 2**20
HOLD_S = 0.5
Hold = Callable[[int], contextlib.AbstractContextManager[None]]


def torch_hold() -> Hold | None:
    """Allocations through PyTorch, or None where it is missing or has no CUDA."""
    try:
        with warnings.catch_warnings():  # torch may warn at import (e.g. about numpy); not what this test checks
            warnings.simplefilter("ignore")
            import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.zeros(1, device="cuda")  # create the CUDA context now, so the baseline already includes it

    @contextlib.contextmanager
    def hold(n_bytes: int) -> Iterator[None]:
        buffer = torch.empty(n_bytes, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        try:
            yield
        finally:
            del buffer
            torch.cuda.empty_cache()  # hand the memory back to the driver, so NVML sees it go
            torch.cuda.synchronize()

    return hold


def driver_hold() -> Hold:
    """Allocations through libcuda directly (cuMemAlloc), for machines without PyTorch."""
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(result: int, call: str) -> None:
        assert result == 0, f"{call} returned CUresult {result}"

    device, context = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")

    @contextlib.contextmanager
    def hold(n_bytes: int) -> Iterator[None]:
        pointer = ctypes.c_uint64()
        check(cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(n_bytes)), "cuMemAlloc_v2")
        try:
            yield
        finally:
            check(cuda.cuMemFree_v2(pointer), "cuMemFree_v2")

    return hold


def any_hold() -> tuple[str, Hold]:
    hold = torch_hold()
    if hold is not None:
        return "torch", hold
    try:
        return "libcuda", driver_hold()
    except OSError as e:
        message = f"neither PyTorch with CUDA nor libcuda.so.1 is usable here ({e}); install torch"
        pytest.fail(message, pytrace=False)


def test_the_sampler_sees_10_gib_held_for_half_a_second() -> None:
    allocator, hold = any_hold()
    sampler = GpuSampler(PidMatcher({"flint": os.getpid()}), interval_s=0.1)
    sampler.baseline()
    started = time.monotonic()
    sampler.start()
    with hold(ALLOCATION):
        time.sleep(HOLD_S)
    time.sleep(0.3)  # a few samples after the free, so the reading covers the drop too
    reading = sampler.stop()
    wall_s = time.monotonic() - started
    cpu_ms, cpu_percent = sampler.thread_cpu_s * 1000, 100 * sampler.thread_cpu_s / wall_s
    print(
        f"\nallocator={allocator} gpu={reading.gpu_name} method={reading.method}\n"
        f"baseline device={reading.baseline_device_mib} MiB, this process={reading.baseline_role_mib['flint']} MiB\n"
        f"peak device={reading.peak_device_mib} MiB, this process={reading.peak_role_mib['flint']} MiB\n"
        f"samples={reading.samples} in {wall_s:.2f} s at {reading.interval_s} s; "
        f"sampler thread CPU {cpu_ms:.1f} ms = {cpu_percent:.2f}% of one core"
    )
    assert reading.measured, reading.method
    peak_process, peak_device, baseline = (
        reading.peak_role_mib["flint"],
        reading.peak_device_mib,
        reading.baseline_device_mib,
    )
    assert peak_process is not None and peak_process >= ALLOCATION_MIB, reading.method
    assert peak_device is not None and baseline is not None
    assert peak_device - baseline >= ALLOCATION_MIB
