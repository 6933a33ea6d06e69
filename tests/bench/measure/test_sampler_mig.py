"""MIG: a device whose process list NVML refuses (NoPermission without root) keeps its device figure, and the row
says why the per-server figures are empty; a MIG UUID selects that MIG device."""

from __future__ import annotations

from pathlib import Path

from bench.measure.roles import PidMatcher
from bench.measure.sampler import LIST_REFUSED, GpuSampler
from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State

FLINT = 100
MIG_UUID = "MIG-4b5a1c2d-0000-5f6e-8a9b-0123456789ab"
MATCHER = PidMatcher({"flint": FLINT}, proc_root=Path("/nonexistent"))


def mig_gpu(refuse: bool = True) -> FakeDevice:
    instance = FakeDevice(MIG_UUID, [State(used=9 * GIB, processes=[(FLINT, 8 * GIB)])], refuse_processes=refuse)
    return FakeDevice("GPU-parent", [State(used=20 * GIB)], mig_devices=[instance])


def read(nvml: FakeNvml, uuids: list[str] | None) -> tuple[int | None, int | None, str, str]:
    sampler = GpuSampler(MATCHER, device_uuids=uuids, interval_s=0.001, nvml=nvml)
    sampler.baseline()
    sampler.start()
    reading = sampler.stop()
    return reading.peak_device_mib, reading.peak_role_mib["flint"], reading.method, reading.gpu_uuid or ""


def test_a_refused_process_list_keeps_the_device_figure_and_says_why() -> None:
    device, flint, method, uuid = read(FakeNvml([mig_gpu()]), [MIG_UUID])
    assert (device, flint, uuid) == (9 * 1024, None, MIG_UUID)
    assert method.startswith("nvml_device_v2+nvml_process; ")
    assert f"{LIST_REFUSED} (NVMLError_NoPermission: Insufficient Permissions; on MIG it takes root)" in method
    assert "no GPU process matched" not in method and "sampling stopped" not in method


def test_with_privileges_the_mig_device_gives_per_server_figures_too() -> None:
    device, flint, method, _ = read(FakeNvml([mig_gpu(refuse=False)]), [MIG_UUID])
    assert (device, flint) == (9 * 1024, 8 * 1024)
    assert LIST_REFUSED not in method
