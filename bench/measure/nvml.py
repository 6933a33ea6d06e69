"""NVML (nvidia-ml-py) calls the bench makes, with the fallbacks older drivers need.

Starting NVML never raises here: a missing library or driver comes back as a reason, so a machine without an
NVIDIA GPU measures nothing instead of failing. docs/gpu.md explains the memory figures these calls return.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any


def start_nvml(nvml: ModuleType | None = None) -> tuple[ModuleType | None, str | None]:
    """Load (pynvml unless `nvml` is given) and start NVML; on failure return the reason instead of raising."""
    try:
        module = nvml if nvml is not None else importlib.import_module("pynvml")
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
    try:
        module.nvmlInit()
    except module.NVMLError as e:
        missing = (module.NVMLError_LibraryNotFound, module.NVMLError_DriverNotLoaded)
        return None, f"no NVIDIA driver ({e})" if isinstance(e, missing) else f"NVML did not start ({e})"
    return module, None


def nvidia_gpu_present() -> bool:
    """Whether NVML sees at least one GPU here: servers then run on the GPU (compose) unless told otherwise."""
    return bool(gpu_names())


def gpu_names() -> list[str]:
    """The names of the GPUs NVML sees here (empty without a driver or a GPU)."""
    try:
        nvml, _ = start_nvml()
        if nvml is None:
            return []
        try:
            names = [
                nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(nvml.nvmlDeviceGetCount())
            ]
        finally:
            nvml.nvmlShutdown()
    except Exception:  # any NVML failure means no GPU the bench can use
        return []
    return [name.decode() if isinstance(name, bytes) else str(name) for name in names]


class NvmlCalls:
    """NVML queries with the fallbacks older drivers need; remembers which versions worked."""

    def __init__(self, nvml: ModuleType) -> None:
        self.nvml = nvml
        self.memory_version = 2
        self._list_processes: Callable[[Any], list[Any]] = nvml.nvmlDeviceGetComputeRunningProcesses
        self._too_old = (nvml.NVMLError_FunctionNotFound, nvml.NVMLLibraryMismatchError)
        self.errors = (nvml.NVMLError, nvml.NVMLLibraryMismatchError)

    def used_bytes(self, handle: Any) -> int:
        if self.memory_version == 2:
            try:
                return int(self.nvml.nvmlDeviceGetMemoryInfo(handle, version=self.nvml.nvmlMemory_v2).used)
            except self.nvml.NVMLError_FunctionNotFound:  # drivers before 515 lack nvmlDeviceGetMemoryInfo_v2
                self.memory_version = 1
        return int(self.nvml.nvmlDeviceGetMemoryInfo(handle).used)

    def processes(self, handle: Any) -> list[tuple[int, int | None]]:
        try:
            found = self._list_processes(handle)
        except self._too_old:  # drivers before 510 lack the _v3 symbol
            if self._list_processes == self.nvml.nvmlDeviceGetComputeRunningProcesses_v2:
                raise
            self._list_processes = self.nvml.nvmlDeviceGetComputeRunningProcesses_v2
            found = self._list_processes(handle)
        return [(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory)) for p in found]

    def accounting_on(self, handle: Any) -> bool:
        try:
            return bool(self.nvml.nvmlDeviceGetAccountingMode(handle) == self.nvml.NVML_FEATURE_ENABLED)
        except self.nvml.NVMLError:  # unsupported (MIG, old GPUs): sample instead
            return False

    def max_bytes(self, handle: Any, pid: int) -> int | None:
        try:
            peak = self.nvml.nvmlDeviceGetAccountingStats(handle, pid).maxMemoryUsage
        except self.nvml.NVMLError:  # no record of this pid on this device
            return None
        return None if peak is None else int(peak)

    def describe(self, handle: Any) -> tuple[str, str]:
        name, uuid = self.nvml.nvmlDeviceGetName(handle), self.nvml.nvmlDeviceGetUUID(handle)
        return (name.decode() if isinstance(name, bytes) else name, uuid.decode() if isinstance(uuid, bytes) else uuid)
