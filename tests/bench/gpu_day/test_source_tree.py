"""The llama.cpp source the CUDA image is built from and the GPU rehearsal carries: only what the llama-server build
uses, a few MB packed, and enough for CMake to configure it for sm_90 and list every step of the build (`ninja -n`)
with this machine's partial CUDA 13.0 (nvcc without cuBLAS, as PyPI's wheels make it; cuBLAS and the driver as
link-only stand-ins here, found the way the rehearsal finds PyPI's in a Python's site packages on the GPU machine).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from bench import ROOT
from bench.llama.cuda_image import build_context, fetch_sdist
from bench.llama.source_tree import used_by_build
from bench.rehearsal.build_llama import Toolkit, bounded, configure_command, find_toolkit
from bench.rehearsal.source import CARRY_LIMIT, write_source

pytestmark = pytest.mark.xdist_group("carried-source")  # one worker packs the source once for the module's tests

KEPT = [
    "CMakeLists.txt",
    "ggml/src/ggml-cuda/fattn.cu",
    "ggml/src/ggml.c",
    "tools/server/server.cpp",
    "tools/ui/CMakeLists.txt",
    "tools/ui/ui.cpp.in",
    "scripts/ui-assets.cmake",
    "vendor/cpp-httplib/httplib.h",
    "common/CMakeLists.txt",
    "src/llama.cpp",
]
LEFT = [
    "models/ggml-vocab-llama-bpe.gguf",
    "docs/build.md",
    "ggml/src/ggml-vulkan/ggml-vulkan.cpp",
    "tests/test-rope.cpp",
    "tools/ui/src/app.html",
    "tools/server/tests/unit/test_basic.py",
    "convert_hf_to_gguf.py",
    "examples/x/y.cpp",
    "ggml/src/ggml-cuda/template-instances/generate_cu_files.py",
    "README.md",
]


def test_the_tree_keeps_what_the_build_uses_and_nothing_else() -> None:
    assert [path for path in KEPT if not used_by_build(path)] == []
    assert [path for path in LEFT if used_by_build(path)] == []


@pytest.fixture(scope="module")
def sdist() -> Path:
    """The pinned sdist: pip downloads it from the package index once per home (checked by its sha256), so the tests
    that take it, directly or through `carried`, are marked `index`."""
    return fetch_sdist()


@pytest.fixture(scope="module")
def carried(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packed source, written once for the tests that read it (neither changes it)."""
    return write_source(sdist, tmp_path_factory.mktemp("carried"))


@pytest.mark.index
def test_the_image_context_and_the_carried_source_are_a_fraction_of_the_sdist(
    sdist: Path, carried: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    size = build_context(sdist, context, ROOT)
    assert 10 * 2**20 < size < 32 * 2**20, size  # of 179 MB
    files = {str(p.relative_to(context)) for p in context.rglob("*") if p.is_file()}
    assert {"Dockerfile", *(f"llama.cpp/{path}" for path in KEPT)} <= files
    assert not any(name.startswith(("llama.cpp/models/", "llama.cpp/docs/", "llama.cpp/tests/")) for name in files)
    packed = carried
    assert packed.stat().st_size < 8 * 2**20 < CARRY_LIMIT  # a few MB of the device's 64 MiB
    with tarfile.open(packed) as archive:
        assert archive.getmember("llama.cpp/ggml/src/ggml-cuda/CMakeLists.txt").isfile()


def stand_in_library(folder: Path, soname: str) -> Path:
    """A link-only library (no CUDA in it): what CMake needs to configure, never run."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stub.c").write_text("int agentbench_stand_in(void) { return 0; }\n")
    target = folder / soname
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(target), f"-Wl,-soname,{soname}", str(folder / "stub.c")], check=True
    )
    return target


@pytest.mark.slow
@pytest.mark.index
def test_the_carried_source_configures_for_sm_90_with_a_partial_cuda_13(
    carried: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH (the build machines have CUDA 13.0's from PyPI's wheels at /usr/local/bin/nvcc)")
    site = tmp_path / "site"  # as PyPI's nvidia-cublas wheel lays itself out in site-packages
    for soname in ("libcublas.so.13", "libcublasLt.so.13"):
        stand_in_library(site / "nvidia" / "cu13" / "lib", soname)
    (site / "nvidia" / "cu13" / "include").mkdir()
    (site / "nvidia" / "cu13" / "include" / "cublas_v2.h").write_text("/* stand-in */\n")
    stand_in_library(tmp_path / "driver", "libcuda.so.1")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "driver"))
    with tarfile.open(carried) as archive:
        archive.extractall(tmp_path / "work", filter="data")
    toolkit = find_toolkit(tmp_path / "work")
    assert isinstance(toolkit, Toolkit), toolkit
    assert (
        "cuBLAS from" in toolkit.detail
        and f"-DCUDA_cuda_driver_LIBRARY={tmp_path}/driver/libcuda.so.1" in toolkit.flags
    )
    build = tmp_path / "build"
    command = configure_command(tmp_path / "work" / "llama.cpp", build, toolkit, "90-real")
    status, seconds = bounded(command, tmp_path / "configure.log", time.monotonic() + 300)
    assert status == 0, (tmp_path / "configure.log").read_text()[-3000:]
    steps = subprocess.run(
        ["cmake", "--build", str(build), "--target", "llama-server", "--", "-n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert steps.count(".cu.o") >= 140 and "Linking CXX executable bin/llama-server" in steps  # every input is there
