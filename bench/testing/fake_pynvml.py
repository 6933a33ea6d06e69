"""A stand-in for the `pynvml` module (nvidia-ml-py): the same names, driven by a script of memory states.

Each FakeDevice walks through its `states`. Every nvmlDeviceGetMemoryInfo call on it moves to the next state (the
last one then repeats), and the process list is the one of the state last read. So a test decides exactly what each
sample sees, and can wait for `device.reads` to know the script was played to the end.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field

GIB = 2**30
MIB = 2**20
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
nvmlMemory_v2 = 0x02000028
# What the C library puts in usedGpuMemory / maxMemoryUsage when it cannot tell; pynvml turns it into None.
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1


class NVMLError(Exception):
    value = 999
    text = "Unknown Error"

    def __str__(self) -> str:
        return self.text


class NVMLError_NotSupported(NVMLError):
    value, text = 3, "Not Supported"


class NVMLError_InvalidArgument(NVMLError):
    value, text = 2, "Invalid Argument"


class NVMLError_NoPermission(NVMLError):
    value, text = 4, "Insufficient Permissions"


class NVMLError_NotFound(NVMLError):
    value, text = 6, "Not Found"


class NVMLError_DriverNotLoaded(NVMLError):
    value, text = 9, "Driver Not Loaded"


class NVMLError_LibraryNotFound(NVMLError):
    value, text = 12, "NVML Shared Library Not Found"


class NVMLError_FunctionNotFound(NVMLError):
    value, text = 13, "Function Not Found"


class NVMLError_GpuIsLost(NVMLError):
    value, text = 15, "GPU is lost"


class NVMLLibraryMismatchError(Exception):
    """pynvml raises this from an unversioned call whose newest symbol the driver lacks."""


@dataclass
class State:
    used: int  # device bytes in use
    processes: list[tuple[int, int | None]] = field(default_factory=list)  # (host pid, bytes or N/A)


@dataclass
class FakeDevice:
    uuid: str
    states: list[State]
    name: str = "NVIDIA Fake 80GB"
    total: int = 80 * GIB
    has_memory_v2: bool = True  # False: a driver before 515
    has_processes_v3: bool = True  # False: a driver before 510
    accounting: dict[int, int] | None = None  # pid -> maxMemoryUsage bytes; None: accounting mode off
    fail_at_read: int | None = None  # this memory read (0-based) and every later one raise `failure`
    failure: type[NVMLError] = NVMLError_GpuIsLost
    refuse_processes: bool = False  # True: process lists raise NoPermission (a MIG device, no privileges)
    compute_capability: tuple[int, int] = (9, 0)
    mig_devices: list[FakeDevice] = field(default_factory=list)  # a MIG-enabled GPU's instances
    # the energy counter (mJ since the driver loaded), each read the next value, the last repeated; None: the card
    # has no counter (NVML answers Not Supported, as before Volta)
    energy_mj: list[int] | None = None
    energy_reads: int = 0
    reads: int = 0
    _current: int = 0

    def read(self) -> State:
        number, self.reads = self.reads, self.reads + 1
        if self.fail_at_read is not None and number >= self.fail_at_read:
            raise self.failure()
        self._current = min(number, len(self.states) - 1)
        return self.states[self._current]

    def current(self) -> State:
        if self.fail_at_read is not None and self.reads > self.fail_at_read:
            raise self.failure()
        return self.states[self._current]


def _friendly(value: int | None) -> int | None:
    return None if value is None or value == NVML_VALUE_NOT_AVAILABLE else value


class FakeNvml(types.ModuleType):
    """Pass an instance where the code expects the pynvml module."""

    NVML_FEATURE_DISABLED = NVML_FEATURE_DISABLED
    NVML_FEATURE_ENABLED = NVML_FEATURE_ENABLED
    nvmlMemory_v2 = nvmlMemory_v2
    NVMLError = NVMLError
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_NoPermission = NVMLError_NoPermission
    NVMLError_InvalidArgument = NVMLError_InvalidArgument
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_FunctionNotFound = NVMLError_FunctionNotFound
    NVMLError_GpuIsLost = NVMLError_GpuIsLost
    NVMLLibraryMismatchError = NVMLLibraryMismatchError

    def __init__(
        self,
        devices: list[FakeDevice],
        *,
        init_error: Exception | None = None,
        driver: str = "580.159.03",
        cuda_driver: int = 13000,
    ) -> None:
        super().__init__("pynvml")
        self.devices = devices
        self.init_error = init_error
        self.driver, self.cuda_driver = driver, cuda_driver
        self.inits = 0
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        if not 0 <= index < len(self.devices):
            raise NVMLError_InvalidArgument()
        return self.devices[index]

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda_driver

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeDevice) -> tuple[int, int]:
        return handle.compute_capability

    def nvmlDeviceGetMigMode(self, handle: FakeDevice) -> list[int]:
        if handle.uuid.startswith("MIG-"):
            raise NVMLError_NotSupported()
        mode = NVML_FEATURE_ENABLED if handle.mig_devices else NVML_FEATURE_DISABLED
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: FakeDevice) -> int:
        return 7 if handle.mig_devices else 0

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: FakeDevice, index: int) -> FakeDevice:
        if index >= len(handle.mig_devices):
            raise NVMLError_NotFound()
        return handle.mig_devices[index]

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> FakeDevice:
        for device in [*self.devices, *(m for d in self.devices for m in d.mig_devices)]:
            if device.uuid == uuid:
                return device
        raise NVMLError_NotFound()

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: FakeDevice) -> int:
        if handle.energy_mj is None:
            raise NVMLError_NotSupported()
        number, handle.energy_reads = handle.energy_reads, handle.energy_reads + 1
        return handle.energy_mj[min(number, len(handle.energy_mj) - 1)]

    def nvmlDeviceGetName(self, handle: FakeDevice) -> str:
        return handle.name

    def nvmlDeviceGetUUID(self, handle: FakeDevice) -> str:
        return handle.uuid

    def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice, version: int | None = None) -> types.SimpleNamespace:
        if version and not handle.has_memory_v2:
            raise NVMLError_FunctionNotFound()
        used = handle.read().used
        memory = types.SimpleNamespace(total=handle.total, free=handle.total - used, used=used)
        if version:
            memory.version, memory.reserved = version, 0
        return memory

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: FakeDevice) -> list[types.SimpleNamespace]:
        if handle.refuse_processes:
            raise NVMLError_NoPermission()
        return [
            types.SimpleNamespace(pid=pid, usedGpuMemory=_friendly(used), gpuInstanceId=0, computeInstanceId=0)
            for pid, used in handle.current().processes
        ]

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: FakeDevice) -> list[types.SimpleNamespace]:
        if not handle.has_processes_v3:
            raise NVMLError_FunctionNotFound()
        return self.nvmlDeviceGetComputeRunningProcesses_v2(handle)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeDevice) -> list[types.SimpleNamespace]:
        try:
            return self.nvmlDeviceGetComputeRunningProcesses_v3(handle)
        except NVMLError_FunctionNotFound:
            raise NVMLLibraryMismatchError("use a versioned function such as _v2") from None

    def nvmlDeviceGetAccountingMode(self, handle: FakeDevice) -> int:
        return NVML_FEATURE_DISABLED if handle.accounting is None else NVML_FEATURE_ENABLED

    def nvmlDeviceGetAccountingStats(self, handle: FakeDevice, pid: int) -> types.SimpleNamespace:
        if handle.accounting is None or pid not in handle.accounting:
            raise NVMLError_NotFound()
        return types.SimpleNamespace(maxMemoryUsage=_friendly(handle.accounting[pid]), isRunning=1)
