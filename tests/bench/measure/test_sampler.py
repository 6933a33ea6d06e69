"""The NVML sampler against a scripted fake pynvml, and the matchers against fake /proc trees."""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pynvml
import pytest

from bench.errors import ConfigError
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher
from bench.measure.sampler import NO_PROCESS_MEMORY, GpuReading, GpuSampler
from bench.results.row import ResultRow
from bench.testing.fake_pynvml import (
    GIB,
    MIB,
    NVML_VALUE_NOT_AVAILABLE,
    FakeDevice,
    FakeNvml,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    State,
)

FLINT, JEFF, CHILD, STRANGER = 100, 200, 300, 900
SERVERS = PidMatcher({"flint": FLINT, "jeff": JEFF}, proc_root=Path("/nonexistent"))
MIB_COLUMNS = [
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
    "baseline_gpu_mib_device",
    "baseline_gpu_mib_flint",
    "baseline_gpu_mib_jeff",
]


def csv(reading: GpuReading) -> dict[str, str]:
    """The results row a reading fills, as the CSV holds it."""
    row = ResultRow()
    reading.fill(row)
    return row.cells()


def wait_until(condition: Callable[[], bool]) -> None:
    """Wait for the sampler thread to get somewhere; a generous limit only guards against a hang."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the sampler thread never got there"
        time.sleep(0.002)


def steady(flint: int, jeff: int, others: list[tuple[int, int | None]] | None = None) -> State:
    return State(used=flint + jeff + 300 * MIB, processes=[(FLINT, flint), (JEFF, jeff), *(others or [])])


def play(nvml: FakeNvml, matcher: ProcessMatcher = SERVERS, device_uuids: list[str] | None = None) -> GpuReading:
    """Baseline, then sample until every watched device (those read at baseline) played its script, then stop."""
    sampler = GpuSampler(matcher, device_uuids=device_uuids, interval_s=0.001, nvml=nvml)
    sampler.baseline()
    sampler.start()
    wait_until(lambda: all(d.reads >= len(d.states) for d in nvml.devices if d.reads))
    return sampler.stop()


def test_a_spike_between_baseline_and_end_is_the_peak() -> None:
    calm, spike = steady(4 * GIB, 1 * GIB), steady(12 * GIB, 1 * GIB)
    nvml = FakeNvml([FakeDevice("GPU-a", [calm, calm, spike, calm, calm])])
    reading = play(nvml)
    assert reading.baseline_device_mib == 5 * 1024 + 300
    assert reading.peak_device_mib == 13 * 1024 + 300
    assert reading.peak_role_mib == {"flint": 12 * 1024, "jeff": 1024}
    assert reading.baseline_role_mib == {"flint": 4 * 1024, "jeff": 1024}
    assert reading.samples >= 4
    assert reading.method == "nvml_device_v2+nvml_process"


def test_other_processes_at_baseline_are_listed_with_their_memory() -> None:
    crowded = steady(4 * GIB, GIB, others=[(STRANGER, 700 * MIB), (STRANGER + 1, NVML_VALUE_NOT_AVAILABLE)])
    reading = play(FakeNvml([FakeDevice("GPU-a", [crowded, steady(4 * GIB, GIB)])]))
    assert reading.other_processes == [f"{STRANGER}:700", f"{STRANGER + 1}:?"]
    assert csv(reading)["gpu_other_processes"] == f"{STRANGER}:700;{STRANGER + 1}:?"


def test_a_quiet_gpu_lists_no_other_process() -> None:
    reading = play(FakeNvml([FakeDevice("GPU-a", [steady(GIB, GIB)])]))
    assert reading.other_processes == []
    assert csv(reading)["gpu_other_processes"] == ""


def write_stat(proc: Path, pid: int, parent: int, name: str = "llama-server") -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) S {parent} {pid} {pid} 0 -1 4194304 0 0\n")


def test_pid_matcher_follows_parents_even_through_odd_command_names(tmp_path: Path) -> None:
    write_stat(tmp_path, CHILD, FLINT, name="cuda worker) S 7 (x")
    write_stat(tmp_path, CHILD + 1, CHILD)
    write_stat(tmp_path, STRANGER, 1)
    matcher = PidMatcher({"flint": FLINT, "jeff": JEFF}, proc_root=tmp_path)
    assert [matcher.role_of(pid) for pid in (FLINT, JEFF, CHILD, CHILD + 1, STRANGER, 4242)] == [
        "flint",
        "jeff",
        "flint",
        "flint",
        None,
        None,
    ]


def test_memory_of_a_server_child_counts_for_its_server(tmp_path: Path) -> None:
    write_stat(tmp_path, CHILD, FLINT)
    state = State(used=9 * GIB, processes=[(CHILD, 6 * GIB), (JEFF, 2 * GIB)])
    reading = play(
        FakeNvml([FakeDevice("GPU-a", [state])]), PidMatcher({"flint": FLINT, "jeff": JEFF}, proc_root=tmp_path)
    )
    assert reading.peak_role_mib == {"flint": 6 * 1024, "jeff": 2 * 1024}
    assert reading.other_processes == []


FLINT_CONTAINER = "3f4e" + "a" * 60
JEFF_CONTAINER = "9b1c" + "b" * 60


def write_cgroup(proc: Path, pid: int, text: str) -> None:
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "cgroup").write_text(text)


def test_container_matcher_reads_the_container_id_from_the_cgroup(tmp_path: Path) -> None:
    write_cgroup(tmp_path, 11, f"0::/system.slice/docker-{FLINT_CONTAINER}.scope\n")  # cgroup v2, systemd driver
    write_cgroup(tmp_path, 12, f"12:memory:/docker/{JEFF_CONTAINER}\n1:name=systemd:/docker/{JEFF_CONTAINER}\n")
    write_cgroup(tmp_path, 13, "0::/user.slice/user-1000.slice/session-2.scope\n")
    matcher = ContainerMatcher({"flint": FLINT_CONTAINER[:12], "jeff": JEFF_CONTAINER.upper()}, proc_root=tmp_path)
    assert [matcher.role_of(pid) for pid in (11, 12, 13, 14)] == ["flint", "jeff", None, None]


def test_container_servers_get_their_memory_by_host_pid(tmp_path: Path) -> None:
    write_cgroup(tmp_path, 5001, f"0::/system.slice/docker-{FLINT_CONTAINER}.scope\n")
    write_cgroup(tmp_path, 5002, f"0::/system.slice/docker-{JEFF_CONTAINER}.scope\n")
    state = State(used=8 * GIB, processes=[(5001, 6 * GIB), (5002, GIB)])
    matcher = ContainerMatcher({"flint": FLINT_CONTAINER, "jeff": JEFF_CONTAINER}, proc_root=tmp_path)
    reading = play(FakeNvml([FakeDevice("GPU-a", [state])]), matcher)
    assert reading.peak_role_mib == {"flint": 6 * 1024, "jeff": 1024}


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (NVMLError_LibraryNotFound(), "unavailable: no NVIDIA driver (NVML Shared Library Not Found)"),
        (NVMLError_DriverNotLoaded(), "unavailable: no NVIDIA driver (Driver Not Loaded)"),
    ],
)
def test_without_a_driver_the_reading_is_empty_with_the_reason(error: Exception, reason: str) -> None:
    sampler = GpuSampler(SERVERS, nvml=FakeNvml([], init_error=error))
    sampler.baseline()
    sampler.start()
    row = csv(sampler.stop())
    assert row["gpu_mem_method"] == reason
    assert [row[c] for c in [*MIB_COLUMNS, "gpu_name", "gpu_uuid", "gpu_samples", "gpu_sample_interval_s"]] == [""] * 10


def test_without_nvidia_ml_py_the_reading_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    with GpuSampler(SERVERS) as sampler:
        pass
    reading = sampler.stop()
    assert reading.method == "unavailable: nvidia-ml-py is not installed (pip install nvidia-ml-py)"
    assert reading.peak_device_mib is None


def test_a_gpu_nvml_cannot_see_makes_the_reading_unavailable() -> None:
    reading = play(FakeNvml([]))
    assert reading.method == "unavailable: NVML sees no GPU"


def test_old_drivers_fall_back_to_v1_memory_and_v2_processes() -> None:
    device = FakeDevice("GPU-a", [steady(3 * GIB, GIB)], has_memory_v2=False, has_processes_v3=False)
    reading = play(FakeNvml([device]))
    assert reading.method == "nvml_device_v1+nvml_process"
    assert reading.peak_device_mib == 4 * 1024 + 300
    assert reading.peak_role_mib == {"flint": 3 * 1024, "jeff": 1024}


def test_process_memory_reported_as_not_available_stays_empty() -> None:
    state = State(used=6 * GIB, processes=[(FLINT, NVML_VALUE_NOT_AVAILABLE), (JEFF, GIB)])
    reading = play(FakeNvml([FakeDevice("GPU-a", [state])]))
    assert reading.peak_role_mib == {"flint": None, "jeff": 1024}
    assert reading.peak_device_mib == 6 * 1024
    assert NO_PROCESS_MEMORY in reading.method
    assert csv(reading)["peak_gpu_mib_flint"] == ""
    assert csv(reading)["baseline_gpu_mib_flint"] == ""


def test_a_server_without_a_gpu_process_is_empty_not_zero() -> None:
    state = State(used=5 * GIB, processes=[(FLINT, 4 * GIB)])
    reading = play(FakeNvml([FakeDevice("GPU-a", [state])]))
    assert reading.peak_role_mib["jeff"] is None
    assert csv(reading)["peak_gpu_mib_jeff"] == ""
    assert "no GPU process matched jeff" in reading.method


def test_accounting_mode_gives_the_exact_process_peak() -> None:
    device = FakeDevice("GPU-a", [steady(4 * GIB, GIB)], accounting={FLINT: 7 * GIB})
    reading = play(FakeNvml([device]))
    assert reading.method.startswith("nvml_device_v2+nvml_accounting")
    assert reading.peak_role_mib == {"flint": 7 * 1024, "jeff": 1024}
    assert "accounting has no record for jeff; sampled peak used" in reading.method


def test_an_error_mid_run_keeps_the_peaks_so_far_and_says_why() -> None:
    calm, spike = steady(2 * GIB, GIB), steady(10 * GIB, GIB)
    nvml = FakeNvml([FakeDevice("GPU-a", [calm, spike, calm, calm], fail_at_read=4)])
    sampler = GpuSampler(SERVERS, interval_s=0.001, nvml=nvml)
    sampler.baseline()
    sampler.start()
    wait_until(lambda: nvml.devices[0].reads > 4)
    reading = sampler.stop()
    assert reading.peak_device_mib == 11 * 1024 + 300
    assert reading.peak_role_mib["flint"] == 10 * 1024
    assert reading.samples == 3
    assert reading.method.endswith("sampling stopped after 3 samples: NVMLError_GpuIsLost: GPU is lost")


def two_gpus() -> list[FakeDevice]:
    return [
        FakeDevice("GPU-aaa", [State(used=2 * GIB, processes=[(STRANGER, 2 * GIB)])], name="NVIDIA A"),
        FakeDevice("GPU-bbb", [State(used=5 * GIB, processes=[(FLINT, 5 * GIB)])], name="NVIDIA B"),
    ]


def test_given_uuids_choose_the_devices() -> None:
    reading = play(FakeNvml(two_gpus()), device_uuids=["GPU-aaa"])
    assert (reading.gpu_uuid, reading.gpu_name, reading.peak_device_mib) == ("GPU-aaa", "NVIDIA A", 2 * 1024)
    assert reading.peak_role_mib["flint"] is None


def test_without_uuids_the_device_serving_a_server_is_watched() -> None:
    reading = play(FakeNvml(two_gpus()))
    assert (reading.gpu_uuid, reading.peak_device_mib, reading.peak_role_mib["flint"]) == (
        "GPU-bbb",
        5 * 1024,
        5 * 1024,
    )


def test_without_uuids_or_servers_every_device_is_summed() -> None:
    nobody = PidMatcher({"flint": 1234}, proc_root=Path("/nonexistent"))
    reading = play(FakeNvml(two_gpus()), nobody)
    assert (reading.gpu_uuid, reading.gpu_name, reading.peak_device_mib) == (
        "GPU-aaa;GPU-bbb",
        "NVIDIA A;NVIDIA B",
        7 * 1024,
    )


def test_an_unknown_uuid_makes_the_reading_unavailable_with_the_fix() -> None:
    reading = play(FakeNvml(two_gpus()), device_uuids=["GPU-zzz"])
    assert reading.method == "unavailable: no GPU with UUID GPU-zzz (Not Found); check gpu_device against nvidia-smi -L"


def test_stop_ends_nvml_and_returns_the_same_reading_twice() -> None:
    nvml = FakeNvml([FakeDevice("GPU-a", [steady(GIB, GIB)])])
    sampler = GpuSampler(SERVERS, interval_s=0.001, nvml=nvml)
    with sampler:
        wait_until(lambda: nvml.devices[0].reads >= 2)
    assert sampler.stop() is sampler.stop()
    assert (nvml.inits, nvml.shutdowns) == (1, 1)
    assert sampler.stop().baseline_device_mib is None  # no baseline() call: nothing invented


def test_a_sample_interval_of_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="above 0"):
        GpuSampler(SERVERS, interval_s=0, nvml=FakeNvml([]))


def test_fill_writes_every_gpu_column_and_empty_for_not_measured() -> None:
    reading = GpuReading(
        method="nvml_device_v2+nvml_process",
        gpu_name="NVIDIA H200",
        gpu_uuid="GPU-1;GPU-2",
        peak_device_mib=14386,
        peak_role_mib={"flint": 13652, "jeff": None},
        baseline_device_mib=13644,
        baseline_role_mib={"flint": 13000, "jeff": None},
        other_processes=["77:512"],
        samples=1234,
        interval_s=0.1,
    )
    expected = {
        "peak_gpu_mib_flint": "13652",
        "peak_gpu_mib_jeff": "",
        "peak_gpu_mib_device": "14386",
        "gpu_name": "NVIDIA H200",
        "gpu_mem_method": "nvml_device_v2+nvml_process",
        "baseline_gpu_mib_device": "13644",
        "baseline_gpu_mib_flint": "13000",
        "baseline_gpu_mib_jeff": "",
        "gpu_uuid": "GPU-1;GPU-2",
        "gpu_other_processes": "77:512",
        "gpu_samples": "1234",
        "gpu_sample_interval_s": "0.1",
    }
    cells = csv(reading)
    assert {column: cells[column] for column in expected} == expected
    assert {column: text for column, text in cells.items() if column not in expected} == {
        column: text for column, text in ResultRow().cells().items() if column not in expected
    }  # nothing else is filled


def test_mib_are_rounded_down() -> None:
    state = State(used=GIB - 1, processes=[(FLINT, 2 * MIB - 1)])
    reading = play(FakeNvml([FakeDevice("GPU-a", [state])]))
    assert (reading.peak_device_mib, reading.peak_role_mib["flint"]) == (1023, 1)


def test_a_run_shorter_than_one_interval_still_gets_a_sample() -> None:
    nvml = FakeNvml([FakeDevice("GPU-a", [steady(GIB, GIB), steady(3 * GIB, GIB)])])
    sampler = GpuSampler(SERVERS, interval_s=3600, nvml=nvml)
    sampler.baseline()
    sampler.start()
    reading = sampler.stop()
    assert reading.samples >= 1
    assert reading.peak_role_mib["flint"] == 3 * 1024


def test_the_real_pynvml_without_its_library_gives_an_unavailable_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "CDLL", no_library)
    with GpuSampler(SERVERS) as sampler:
        pass
    assert sampler.stop().method == "unavailable: no NVIDIA driver (NVML Shared Library Not Found)"


def test_the_fake_only_offers_what_the_real_pynvml_has() -> None:
    offered = [name for name in vars(FakeNvml) if name.startswith(("nvml", "NVML"))]
    assert len(offered) > 20
    assert [name for name in offered if not hasattr(pynvml, name)] == []
    assert FakeNvml.nvmlMemory_v2 == pynvml.nvmlMemory_v2
    assert "version" in inspect.signature(pynvml.nvmlDeviceGetMemoryInfo).parameters
    for name in offered:
        real = getattr(pynvml, name)
        if isinstance(real, type) and issubclass(real, pynvml.NVMLError) and real is not pynvml.NVMLError:
            assert str(real()) == str(getattr(FakeNvml, name)()), name


def test_the_run_s_energy_is_the_counter_s_rise_summed_over_the_watched_cards() -> None:
    calm = steady(4 * GIB, GIB)
    a = FakeDevice("GPU-a", [calm, calm, calm], energy_mj=[1_000_000, 1_250_500])  # 250.5 J over the run
    b = FakeDevice("GPU-b", [calm, calm, calm], energy_mj=[7_000, 107_000])  # 100 J
    row = csv(play(FakeNvml([a, b]), device_uuids=["GPU-a", "GPU-b"]))
    assert (row["gpu_energy_j"], row["gpu_energy_method"]) == ("350.5", "nvml_total_energy")
    assert a.energy_reads == b.energy_reads == 2  # once at start, once at stop: nothing in the sampling loop


def test_a_card_without_an_energy_counter_leaves_the_cell_empty_with_the_reason() -> None:
    row = csv(play(FakeNvml([FakeDevice("GPU-a", [steady(GIB, GIB)])])))
    assert row["gpu_energy_j"] == "" and row["gpu_energy_method"].startswith("unavailable: NVML has no energy counter")
    assert row["gpu_energy_method"].endswith("(Not Supported)")
    without = GpuSampler(SERVERS, nvml=FakeNvml([], init_error=NVMLError_DriverNotLoaded()))
    without.start()
    empty = csv(without.stop())
    assert empty["gpu_energy_j"] == "" and empty["gpu_energy_method"] == empty["gpu_mem_method"]
