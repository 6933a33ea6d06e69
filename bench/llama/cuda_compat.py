"""Which CUDA a build needs and which CUDA the host's driver runs, compared.

NVML reports the newest CUDA the installed driver supports (nvmlSystemGetCudaDriverVersion_v2, e.g. 12020 for
12.2). A program built with CUDA X.Y runs on that driver when X is at most the driver's major: an older major
always, the same major also with a newer minor (CUDA's minor version compatibility, from CUDA 11.1 on), as long as
the program carries native code for the GPU (sm_XX) and needs no PTX compiled by the driver: a driver can only JIT
PTX from a compiler no newer than itself. A newer major never runs ("CUDA driver version is insufficient").
The minimum driver per major (Linux, x86-64) comes from NVIDIA's CUDA compatibility guide.
"""

from __future__ import annotations

import re
from types import ModuleType

# The oldest Linux driver each CUDA major runs on (minor version compatibility): NVIDIA's compatibility guide.
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
_VERSION = re.compile(r"^(\d+)\.(\d+)")


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


def runs_on(build: tuple[int, int], driver: tuple[int, int], *, ptx_only: bool = False) -> str | None:
    """Why a build with CUDA `build` does not run on a driver supporting CUDA `driver`; None when it runs."""
    b, d = f"{build[0]}.{build[1]}", f"{driver[0]}.{driver[1]}"
    if build[0] > driver[0]:
        return f"built with CUDA {b}, and this driver runs CUDA {d} at most: CUDA {build[0]} needs driver " + (
            f"{MIN_DRIVER[build[0]]} or later" if build[0] in MIN_DRIVER else "of its own release or later"
        )
    if ptx_only and build > driver:
        return f"built as PTX with CUDA {b}, which this driver (CUDA {d}) cannot compile: PTX needs a driver as new"
    return None
