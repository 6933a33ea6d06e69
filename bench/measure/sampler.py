"""GPU memory during a run, read through NVML (nvidia-ml-py): per device, per server process, and a baseline.

A daemon thread samples every `interval_s`. Peaks are kept in bytes and reported in MiB, rounded down
(bytes // 2**20). A missing driver or library never raises: the reading says "unavailable: <reason>" and every
MiB value is None, which the row writes as "". docs/gpu.md explains the methods and their limits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field, replace
from types import ModuleType, TracebackType
from typing import Any

from bench.errors import ConfigError
from bench.measure.nvml import NvmlCalls, start_nvml
from bench.measure.roles import ROLES, ProcessMatcher, Role
from bench.results.column import cell
from bench.results.row import ResultRow

MIB = 2**20
NO_PROCESS_MEMORY = "process memory not available (NVML reports N/A)"
# MIG devices list their processes only to privileged callers; the device figure is still sampled.
LIST_REFUSED = "per-server figures empty: NVML refused the process list"


def _no_roles() -> dict[Role, int | None]:
    return dict.fromkeys(ROLES)


def _mib(n_bytes: int | None) -> int | None:
    return None if n_bytes is None else n_bytes // MIB


def _add(total: int | None, used: int | None) -> int | None:
    return None if total is None or used is None else total + used


def _bigger(old: int | None, new: int | None) -> int | None:
    if old is None or new is None:
        return new if old is None else old
    return max(old, new)


@dataclass(frozen=True)
class GpuReading:
    """GPU memory for one run; every MiB value is None when it was not measured."""

    method: str
    gpu_name: str | None = None
    gpu_uuid: str | None = None
    peak_device_mib: int | None = None
    peak_role_mib: dict[Role, int | None] = field(default_factory=_no_roles)
    baseline_device_mib: int | None = None
    baseline_role_mib: dict[Role, int | None] = field(default_factory=_no_roles)
    other_processes: list[str] = field(default_factory=list)
    samples: int = 0
    interval_s: float = 0.1
    energy_j: float | None = None  # the watched cards' energy over the run (NVML's counter); None: not measured
    energy_method: str = ""

    @classmethod
    def unavailable(cls, reason: str, interval_s: float) -> GpuReading:
        return cls(method=f"unavailable: {reason}", interval_s=interval_s)

    @property
    def measured(self) -> bool:
        return not self.method.startswith("unavailable")

    def fill(self, row: ResultRow) -> None:
        row.peak_gpu_mib_flint, row.peak_gpu_mib_jeff = self.peak_role_mib.get("flint"), self.peak_role_mib.get("jeff")
        row.peak_gpu_mib_device = self.peak_device_mib
        row.gpu_name, row.gpu_mem_method, row.gpu_uuid = self.gpu_name or "", self.method, self.gpu_uuid or ""
        row.baseline_gpu_mib_device = self.baseline_device_mib
        row.baseline_gpu_mib_flint = self.baseline_role_mib.get("flint")
        row.baseline_gpu_mib_jeff = self.baseline_role_mib.get("jeff")
        row.gpu_other_processes = list(self.other_processes)
        # Without NVML nothing was sampled: a sample count of 0 would read as a measurement, so it stays empty.
        row.gpu_samples = self.samples if self.measured else None
        row.gpu_sample_interval_s = self.interval_s if self.measured else None
        row.gpu_energy_j = self.energy_j
        row.gpu_energy_method = self.energy_method if self.measured else self.method


@dataclass
class _Sample:
    device_bytes: int | None
    role_bytes: dict[Role, int | None]
    other_bytes: dict[int, int | None]


class GpuSampler:
    """Samples GPU memory in a daemon thread between start() and stop(); baseline() before the run."""

    def __init__(
        self,
        matcher: ProcessMatcher,
        *,
        device_uuids: list[str] | None = None,
        interval_s: float = 0.1,
        nvml: ModuleType | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ConfigError(
                f"the GPU sample interval must be above 0 s (got {interval_s}); set a positive gpu_sample_interval_s"
            )
        self._matcher, self._uuids, self.interval_s = matcher, list(device_uuids or []), interval_s
        module, self._unavailable = start_nvml(nvml)
        self._calls = NvmlCalls(module) if module is not None else None
        self._handles: list[Any] | None = None
        self._described: list[tuple[str, str]] = []  # (name, uuid) per watched GPU
        self._role_cache: dict[int, Role | None] = {}
        self._role_pids: dict[Role, set[int]] = {}
        self._notes: list[str] = []
        self._baseline: _Sample | None = None
        self._peak_device: int | None = None
        self._peak_roles: dict[Role, int | None] = _no_roles()
        self._samples = 0
        self._sampling_failed = False
        self._lists_refused = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reading: GpuReading | None = None
        self.thread_cpu_s = 0.0  # CPU time the sampling thread used: its cost, reported by perf/gpu_sampler.py

    def __enter__(self) -> GpuSampler:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def baseline(self) -> None:
        """Record memory right after the servers loaded, and which other processes hold memory on those GPUs."""
        if not self._select_devices():
            return
        try:
            self._baseline = self._take()
        except Exception as e:  # a failed baseline must not cost the run its peaks
            self._note(f"baseline failed: {type(e).__name__}: {e}")

    def start(self) -> None:
        if self._thread is not None or not self._select_devices():
            return
        self._energy_start = self._energy()
        self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> GpuReading:
        if self._reading is not None:
            return self._reading
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=max(5.0, 3 * self.interval_s))
            if self._thread.is_alive():  # stuck in an NVML call: report what we have rather than wait forever
                self._note("the sampler thread did not stop in time; peaks may miss the end of the run")
            elif not self._sampling_failed:
                self._sample_once()  # the state at the end counts too, and a very short run still gets a sample
        energy = self._energy_over_run()
        self._reading = replace(self._finish(), energy_j=energy[0], energy_method=energy[1])
        if self._calls is not None and not (self._thread and self._thread.is_alive()):
            with contextlib.suppress(self._calls.nvml.NVMLError):  # best effort: the numbers are already taken
                self._calls.nvml.nvmlShutdown()
        return self._reading

    def _select_devices(self) -> bool:
        """Watch the configured UUIDs, else the GPUs serving a matched process, else every GPU."""
        if self._handles is not None or self._calls is None:
            return self._handles is not None
        nvml = self._calls.nvml
        try:
            if self._uuids:
                return self._watch([self._handle_by_uuid(uuid) for uuid in self._uuids])
            every = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        except nvml.NVMLError as e:
            self._unavailable = self._unavailable or f"NVML could not list the GPUs ({e})"
            return False
        if not every:
            self._unavailable = "NVML sees no GPU"
            return False
        serving = [h for h in every if self._serves_a_role(h)]
        return self._watch(serving or every)

    def _watch(self, handles: list[Any]) -> bool:
        assert self._calls is not None
        try:
            self._described = [self._calls.describe(h) for h in handles]
        except self._calls.nvml.NVMLError as e:
            self._unavailable = f"NVML could not name the GPUs ({e})"
            return False
        self._handles = handles
        return True

    def _handle_by_uuid(self, uuid: str) -> Any:
        assert self._calls is not None
        try:
            return self._calls.nvml.nvmlDeviceGetHandleByUUID(uuid)
        except self._calls.nvml.NVMLError as e:
            self._unavailable = f"no GPU with UUID {uuid} ({e}); check gpu_device against nvidia-smi -L"
            raise

    def _serves_a_role(self, handle: Any) -> bool:
        assert self._calls is not None
        try:
            return any(self._role(pid) is not None for pid, _ in self._calls.processes(handle))
        except self._calls.errors:  # this GPU cannot list processes: it is then watched only if no GPU can
            return False

    def _role(self, pid: int) -> Role | None:
        if pid not in self._role_cache:  # server processes live for the whole run, so one lookup per PID
            self._role_cache[pid] = self._matcher.role_of(pid)
        return self._role_cache[pid]

    def _take(self) -> _Sample:
        assert self._calls is not None and self._handles is not None
        device = sum(self._calls.used_bytes(h) for h in self._handles)
        matched: dict[Role, int | None] = {}
        others: dict[int, int | None] = {}
        for handle in self._handles:
            try:
                listed = self._calls.processes(handle)
            except self._calls.errors as e:  # e.g. NoPermission on a MIG device: keep the device figure
                self._lists_refused = True
                self._note(f"{LIST_REFUSED} ({type(e).__name__}: {e}; on MIG it takes root)")
                continue
            # A process spread over several watched GPUs counts once, with its memory summed; N/A stays N/A.
            for pid, used in listed:
                role = self._role(pid)
                if role is None:
                    others[pid] = _add(others.get(pid, 0), used)
                    continue
                self._role_pids.setdefault(role, set()).add(pid)
                matched[role] = _add(matched.get(role, 0), used)
                if used is None:
                    self._note(NO_PROCESS_MEMORY)
        return _Sample(device, {**_no_roles(), **matched}, others)

    def _loop(self) -> None:
        started = time.thread_time()
        next_at = time.monotonic()
        while not self._stop.is_set() and self._sample_once():
            # A fixed schedule: the time a query took comes off the wait, and a late sample does not cause a burst.
            next_at = max(next_at + self.interval_s, time.monotonic())
            self._stop.wait(next_at - time.monotonic())
        self.thread_cpu_s = time.thread_time() - started

    def _sample_once(self) -> bool:
        try:
            self._record(self._take())
        except Exception as e:  # e.g. GPU is lost: keep the peaks so far and say why sampling ended
            self._sampling_failed = True
            self._note(f"sampling stopped after {self._samples} samples: {type(e).__name__}: {e}")
            return False
        return True

    def _record(self, sample: _Sample) -> None:
        self._samples += 1
        self._peak_device = _bigger(self._peak_device, sample.device_bytes)
        for role, used in sample.role_bytes.items():
            self._peak_roles[role] = _bigger(self._peak_roles.get(role), used)

    def _energy(self) -> list[int] | str:
        """Each watched card's energy counter (mJ), or why NVML gives none (a card before Volta, a MIG instance)."""
        assert self._calls is not None and self._handles is not None
        nvml = self._calls.nvml
        try:
            return [int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)) for handle in self._handles]
        except nvml.NVMLError as e:
            return f"unavailable: NVML has no energy counter here ({e})"

    def _energy_over_run(self) -> tuple[float | None, str]:
        """The joules the watched cards used between start() and stop(), summed over the cards."""
        start = getattr(self, "_energy_start", "unavailable: the sampler never started")
        if isinstance(start, str) or self._calls is None or self._handles is None:
            return None, str(start)
        end = self._energy()
        if isinstance(end, str):
            return None, end
        return round(sum(b - a for a, b in zip(start, end, strict=True)) / 1000, 1), "nvml_total_energy"

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes.append(note)

    def _finish(self) -> GpuReading:
        if self._unavailable is not None or self._calls is None or self._handles is None:
            return GpuReading.unavailable(self._unavailable or "the sampler never started", self.interval_s)
        peaks, process_method = self._role_peaks()
        for role in ROLES:
            if role not in self._role_pids and not self._lists_refused:
                self._note(f"no GPU process matched {role}")
        method = f"nvml_device_v{self._calls.memory_version}+{process_method}"
        base = self._baseline or _Sample(device_bytes=None, role_bytes=_no_roles(), other_bytes={})
        return GpuReading(
            method="; ".join([method, *self._notes]),
            gpu_name=";".join(dict.fromkeys(name for name, _ in self._described)),
            gpu_uuid=";".join(uuid for _, uuid in self._described),
            peak_device_mib=_mib(self._peak_device),
            peak_role_mib={role: _mib(used) for role, used in peaks.items()},
            baseline_device_mib=_mib(base.device_bytes),
            baseline_role_mib={role: _mib(used) for role, used in base.role_bytes.items()},
            other_processes=[f"{pid}:{cell(_mib(used)) or '?'}" for pid, used in base.other_bytes.items()],
            samples=self._samples,
            interval_s=self.interval_s,
        )

    def _role_peaks(self) -> tuple[dict[Role, int | None], str]:
        """Sampled peaks, replaced by NVML accounting's exact per-process maximum where that mode is on."""
        assert self._calls is not None and self._handles is not None
        calls, handles = self._calls, self._handles
        if not handles or not all(calls.accounting_on(h) for h in handles):
            return dict(self._peak_roles), "nvml_process"
        peaks = dict(self._peak_roles)
        for role, pids in self._role_pids.items():
            maxima = [m for pid in pids for h in handles if (m := calls.max_bytes(h, pid)) is not None]
            if maxima:
                peaks[role] = sum(maxima)
            else:
                self._note(f"accounting has no record for {role}; sampled peak used")
        return peaks, "nvml_accounting"
