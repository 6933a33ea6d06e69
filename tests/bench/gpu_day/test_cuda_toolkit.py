""".ci/cuda_toolkit.py on made-up toolkits: a partial machine toolkit is found incomplete (as this build machine's
CUDA 13.0 is: nvcc, no cuBLAS, no driver stub), PyPI's tree is viewed as a toolkit with the plain library names and
a driver stub that defines the driver's symbols, and a driver too old for PyPI's CUDA is refused in one line."""

from __future__ import annotations

import ctypes
import importlib.util
import stat
from pathlib import Path
from types import ModuleType

import pytest

from bench.testing.fake_pynvml import GIB, FakeDevice, FakeNvml, State

ROOT = Path(__file__).resolve().parents[3]
HEADER = """typedef int CUresult;
#define cuMemAlloc cuMemAlloc_v2
CUresult cuInit(unsigned int flags);
CUresult cuMemAlloc(void *pointer, unsigned long size);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long flags, int *status);
"""


@pytest.fixture(scope="module")
def toolkit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cuda_toolkit", ROOT / ".ci" / "cuda_toolkit.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def files(root: Path, names: list[str]) -> Path:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(HEADER if name.endswith("cuda.h") else "")
    return root


def test_a_toolkit_without_cublas_or_a_driver_stub_is_incomplete(
    toolkit: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(toolkit, "system_libcuda", lambda: "")
    partial = files(tmp_path, ["bin/nvcc", "include/cuda_runtime.h", "include/cuda.h", "lib64/libcudart.so"])
    assert toolkit.missing_parts(partial) == [
        "cublas_v2.h",
        "libcublas.so",
        "libcublasLt.so",
        "the driver library stub (lib64/stubs/libcuda.so)",
    ]
    files(tmp_path, ["include/cublas_v2.h", "lib64/libcublas.so", "lib64/libcublasLt.so", "lib64/stubs/libcuda.so"])
    assert toolkit.missing_parts(partial) == []


@pytest.mark.usefixtures("child_processes")
def test_nvcc_says_where_its_toolkit_is_even_behind_a_wrapper(toolkit: ModuleType, tmp_path: Path) -> None:
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(f"#!/bin/sh\necho '#$ _HERE_={tmp_path}/cuda/bin' >&2\necho '#$ TOP={tmp_path}/cuda/bin/..' >&2\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    assert toolkit.nvcc_top(str(nvcc)) == (tmp_path / "cuda").resolve()


@pytest.mark.usefixtures("child_processes")
def test_pypis_tree_is_viewed_as_a_toolkit_with_a_stub_that_defines_the_drivers_symbols(
    toolkit: ModuleType, tmp_path: Path
) -> None:
    tree = files(tmp_path / "cu13", ["bin/nvcc", "bin/nvcc.profile", "include/cuda.h", "nvvm/bin/cicc"])
    files(tree, ["lib/libcudart.so.13", "lib/libcublas.so.13", "lib/libnvrtc-builtins.so.13.0"])
    view = tmp_path / "view"
    toolkit.make_view(tree, view)
    assert (view / "bin" / "nvcc").resolve() == tree / "bin" / "nvcc" and (view / "include" / "cuda.h").exists()
    assert (view / "lib64" / "libcublas.so").resolve() == tree / "lib" / "libcublas.so.13"
    assert (view / "lib64" / "libnvrtc-builtins.so").exists()
    stub = ctypes.CDLL(str(view / "no-driver" / "libcuda.so.1"))
    assert stub.cuInit(0) == toolkit.STUB_LIBRARY_ERROR  # CUDA_ERROR_STUB_LIBRARY, as NVIDIA's stub answers
    assert stub.cuMemAlloc_v2(None, 0) == toolkit.STUB_LIBRARY_ERROR  # the symbol the header's macro names
    assert not hasattr(stub, "cuMemAlloc")


def test_a_driver_older_than_pypis_cuda_is_refused_with_the_fix(toolkit: ModuleType) -> None:
    r535 = FakeNvml([FakeDevice("GPU-a", [State(used=GIB)])], driver="535.183.01", cuda_driver=12020)
    with pytest.raises(toolkit.ToolkitError) as caught:
        toolkit.check_driver((13, 0), "PyPI's CUDA compiler", toolkit.PYPI_FIX, r535)
    message = str(caught.value)
    assert "driver 535.183.01" in message and "CUDA 12.2" in message and "cuda-toolkit-12" in message
    r580 = FakeNvml([FakeDevice("GPU-a", [State(used=GIB)])], driver="580.159.03", cuda_driver=13000)
    toolkit.check_driver((13, 0), "PyPI's CUDA compiler", toolkit.PYPI_FIX, r580)
