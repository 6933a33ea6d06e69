"""Which CUDA a build needs and which CUDA the host's driver runs, compared.

NVML reports the newest CUDA the installed driver supports (nvmlSystemGetCudaDriverVersion_v2, e.g. 12020 for
12.2). A program built with CUDA X.Y runs on that driver when X is at most the driver's major: an older major
always, the same major also with a newer minor (CUDA's minor version compatibility, from CUDA 11.1 on), as long as
the program carries native code for the GPU (sm_XX) and needs no PTX compiled by the driver: a driver can only JIT
PTX from a compiler no newer than itself. A newer major never runs ("CUDA driver version is insufficient").
The minimum driver per major (Linux, x86-64) comes from NVIDIA's CUDA compatibility guide.

From CUDA 12.8 on, llama.cpp compresses its kernels with `-compress-mode=$GGML_CUDA_COMPRESSION_MODE`, "size" unless
told otherwise (ggml/src/ggml-cuda/CMakeLists.txt at b11434). Fatbins compressed with "size" or "balance" load only
on a driver of 550.54.14 or later (CUDA 12; NVIDIA's requirement as RAPIDS' build tables state it), whatever minor
version compatibility says: an R535 driver starts such a server and its first kernel fails with "device kernel image
is invalid". "speed" is nvcc's own default, the compression builds made before 12.8 carry, so the bench's builds
(the CUDA image, `make setup GPU=cuda`, the GPU day's) pass it and keep the floor of their CUDA major.
"""

from __future__ import annotations

import re
from types import ModuleType

# The oldest Linux driver each CUDA major runs on (minor version compatibility): NVIDIA's compatibility guide.
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
_VERSION = re.compile(r"^(\d+)\.(\d+)")
COMPRESSION_MODE = "speed"  # what the bench's own builds use
COMPRESSION_FLAG = f"-DGGML_CUDA_COMPRESSION_MODE={COMPRESSION_MODE}"
LLAMA_DEFAULT_COMPRESSION = "size"  # llama.cpp's, for a build that does not say
COMPRESSED_FROM = (12, 8)  # llama.cpp passes -compress-mode from this toolkit on
NEW_COMPRESSION = {"size": "550.54.14", "balance": "550.54.14"}  # mode -> the oldest driver that loads it


def parse_cuda(text: str) -> tuple[int, int] | None:
    """ "12.2", "12.2.140" or "cuda12.2" -> (12, 2); None when there is no version in it."""
    found = _VERSION.match(text.strip().removeprefix("cuda").removeprefix("CUDA ").strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def from_nvml_number(number: int) -> tuple[int, int]:
    """NVML's integer form (1000 * major + 10 * minor): 12020 -> (12, 2)."""
    return number // 1000, (number % 1000) // 10


def driver_cuda(nvml: ModuleType) -> tuple[str, tuple[int, int]]:
    """(driver version, newest CUDA it runs) from a started NVML; raises NVMLError when NVML cannot tell."""
    driver = nvml.nvmlSystemGetDriverVersion()
    getter = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or nvml.nvmlSystemGetCudaDriverVersion
    text = driver.decode() if isinstance(driver, bytes) else str(driver)
    return text, from_nvml_number(int(getter()))


def driver_number(version: str) -> tuple[int, ...]:
    """ "535.183.01" -> (535, 183, 1); () when it is not a driver version."""
    parts = re.findall(r"\d+", version.split()[0]) if version.strip() else []
    return tuple(int(p) for p in parts)


def compression_of(build: tuple[int, int], said: str | None) -> str:
    """The -compress-mode a llama.cpp build with CUDA `build` carries: what it says, else llama.cpp's default."""
    if build < COMPRESSED_FROM:
        return "none"
    return said or LLAMA_DEFAULT_COMPRESSION


def compression_floor(build: tuple[int, int], compression: str, driver_version: str) -> str | None:
    """Why this driver cannot load the build's compressed kernels; None when it can (or cannot be told)."""
    mode = compression_of(build, compression or None)
    floor, have = NEW_COMPRESSION.get(mode), driver_number(driver_version)
    if floor is None or not have or build[0] != 12 or have >= driver_number(floor):
        return None
    return (
        f"built with CUDA {build[0]}.{build[1]} and kernels compressed with -compress-mode={mode}"
        f"{'' if compression else ' (llama.cpp default from CUDA 12.8)'}, which need driver {floor} or later "
        f"(this one: {driver_version}): rebuild with "
        f"{COMPRESSION_FLAG} (the bench's own builds are), or update the driver"
    )


def runs_on(
    build: tuple[int, int],
    driver: tuple[int, int],
    *,
    ptx_only: bool = False,
    compression: str = COMPRESSION_MODE,
    driver_version: str = "",
) -> str | None:
    """Why a build with CUDA `build` (kernels compressed with `compression`, "" when unknown) does not run on a driver
    supporting CUDA `driver` (`driver_version` its version, "" when unknown); None when it runs."""
    b, d = f"{build[0]}.{build[1]}", f"{driver[0]}.{driver[1]}"
    if build[0] > driver[0]:
        return f"built with CUDA {b}, and this driver runs CUDA {d} at most: CUDA {build[0]} needs driver " + (
            f"{MIN_DRIVER[build[0]]} or later" if build[0] in MIN_DRIVER else "of its own release or later"
        )
    if ptx_only and build > driver:
        return f"built as PTX with CUDA {b}, which this driver (CUDA {d}) cannot compile: PTX needs a driver as new"
    return compression_floor(build, compression, driver_version)
