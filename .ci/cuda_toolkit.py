#!/usr/bin/env python3
"""make setup GPU=cuda, before the build: a CUDA toolkit llama.cpp can be built with, and the CMake flags for it.

0. The architectures: `native` builds for this host's GPUs, so a host where no NVIDIA driver answers (nothing to
   detect) is refused first, naming the driver, before anything is looked for or installed.
1. The machine's toolkit (the nvcc on PATH, else $CUDA_PATH, else /usr/local/cuda), when it is complete: nvcc, the
   runtime and cuBLAS headers and libraries, and a driver library to link against (its lib64/stubs/libcuda.so, or
   the driver's own).
2. Otherwise PyPI's CUDA packages (compiler, runtime, cuBLAS: CUDA_PACKAGES) installed into this environment. Their
   files share one tree (site-packages/nvidia/cu13) whose libraries have only versioned names, so a view of it is
   made in VIEW (bin, include, nvvm linked; lib64 with the plain names CMake looks for, and a link stub libcuda.so
   with only the driver's soname: the driver's symbols are resolved when the server starts, as with NVIDIA's own
   stubs). PyPI's CUDA 12 compiler packages (nvidia-cuda-nvcc-cu12, 12.0 to 12.9) hold ptxas alone, so the PyPI
   toolkit is CUDA 13, which needs driver 580 or later.
3. Either way the kernels are compressed as nvcc does by default, not with llama.cpp's -compress-mode=size (CUDA 12.8
   and later), which would need driver 550.54.14 (bench/llama/cuda_compat.py): a 12.8/12.9 toolkit runs on R535.

Either way VIEW/lib64 ends up holding (links to) the runtime libraries the server loads: the bench's server
environment puts it on the loader path (bench.llama.binaries.llama_env), so no user sets LD_LIBRARY_PATH.
When NVML sees a driver here, a toolkit whose CUDA that driver cannot run is refused in one line with the fix.

Usage: .venv/bin/python .ci/cuda_toolkit.py VIEW [ARCHITECTURES]   prints the CMake flags (one line) on stdout
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

from bench.llama.cuda_compat import COMPRESSION_FLAG, COMPRESSION_MODE, driver_cuda, parse_cuda, runs_on
from bench.llama.nvcc import library_dir, nvcc_top
from bench.measure.nvml import start_nvml

# PyPI's CUDA 13.0 line (the newest whose every package this project's build machines hold); exact pins, so every
# machine builds with the same compiler. nvidia-cublas 13.1 is the first cuBLAS of the 13 line on those machines.
CUDA_PACKAGES = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-cccl==13.0.85",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cublas==13.1.1.3",
    "nvidia-cuda-nvrtc==13.0.88",
]
PYPI_FIX = (
    "install a complete CUDA 12 toolkit (nvcc and cuBLAS, e.g. the distribution's cuda-toolkit-12-x) and run "
    "`rm .venv/cuda.mk && make setup GPU=cuda` again, or update the driver to 580 or later (PyPI's CUDA 12 nvcc "
    "packages hold ptxas only)"
)
RUNTIME_LIBRARIES = ("libcudart.so", "libcublas.so", "libcublasLt.so")
HEADERS = ("cuda_runtime.h", "cublas_v2.h", "cuda.h")
STUB_LIBRARY_ERROR = 34  # CUDA_ERROR_STUB_LIBRARY in cuda.h: what NVIDIA's own stub answers


class ToolkitError(Exception):
    pass


def log(message: str) -> None:
    print(f"cuda: {message}", file=sys.stderr, flush=True)


def missing_parts(root: Path) -> list[str]:
    """What a toolkit at `root` lacks for building llama.cpp with CUDA (empty: complete)."""
    missing = [] if (root / "bin" / "nvcc").exists() else ["nvcc"]
    include = [root / "include", root / "targets/x86_64-linux/include"]
    missing += [h for h in HEADERS if not any((d / h).exists() for d in include)]
    missing += [lib for lib in RUNTIME_LIBRARIES if library_dir(root, lib) is None]
    stub = any((root / sub / "stubs" / "libcuda.so").exists() for sub in ("lib64", "lib", "targets/x86_64-linux/lib"))
    if not stub and not system_libcuda():
        missing.append("the driver library stub (lib64/stubs/libcuda.so)")
    return missing


def system_libcuda() -> str:
    """The driver's own link library (libcuda.so) on this host, or ""."""
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    found = re.search(r"\slibcuda\.so \(.*x86-64.*\) => (\S+)", listing)
    return found.group(1) if found else ""


def machine_toolkit() -> tuple[Path | None, list[str]]:
    home = Path(os.environ.get("CUDA_PATH") or "/usr/local/cuda")  # CUDA_PATH: CMake's FindCUDAToolkit reads it too
    nvcc = shutil.which("nvcc") or (str(home / "bin" / "nvcc") if (home / "bin" / "nvcc").exists() else "")
    if not nvcc:
        return None, ["nvcc"]
    top = nvcc_top(nvcc)
    if top is None:
        return None, [f"a working nvcc ({nvcc} did not say where its toolkit is)"]
    return top, missing_parts(top)


def version_text(cuda: tuple[int, int] | None) -> str:
    return f"{cuda[0]}.{cuda[1]}" if cuda else "of unknown version"


def toolkit_cuda(root: Path) -> tuple[int, int] | None:
    """The toolkit's CUDA version: version.json, else the nvcc that is there."""
    info = root / "version.json"
    if info.exists():
        version = json.loads(info.read_text()).get("cuda", {}).get("version", "")
        if parse_cuda(version):
            return parse_cuda(version)
    done = subprocess.run([str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True, timeout=60)
    found = re.search(r"release (\d+\.\d+)", done.stdout)
    return parse_cuda(found.group(1)) if found else None


def check_driver(cuda: tuple[int, int] | None, where: str, fix: str, nvml_module: ModuleType | None = None) -> None:
    """Refuse a toolkit whose CUDA the driver here cannot run (nothing to check without a driver)."""
    nvml, _ = start_nvml(nvml_module)
    if nvml is None or cuda is None:
        return
    try:
        driver, runs = driver_cuda(nvml)
    finally:
        nvml.nvmlShutdown()
    why = runs_on(cuda, runs)
    if why:
        raise ToolkitError(f"{where}: {why} (driver {driver}); {fix}")


def check_architectures(architectures: str, nvml_module: ModuleType | None = None) -> None:
    """`native` needs a GPU to detect: where no NVIDIA driver answers, or it lists none, the build is refused now,
    before anything is installed (CMake would fail much later, the reason long scrolled away)."""
    if architectures != "native":
        return
    nvml, reason = start_nvml(nvml_module)
    count = 0
    if nvml is not None:
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as e:
            reason = f"NVML cannot count the GPUs ({e})"
        finally:
            nvml.nvmlShutdown()
    if count:
        return
    raise ToolkitError(
        f"CUDA_ARCHITECTURES=native builds for this host's GPUs, and there is none to detect: "
        f"{reason or 'the NVIDIA driver lists no GPU'}; name the GPUs' architectures, e.g. "
        '`make setup GPU=cuda CUDA_ARCHITECTURES=90` (H100/H200; 80: A100, 89: L4/L40S, "80;90" for both)'
    )


def install_pypi_toolkit() -> Path:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *CUDA_PACKAGES], check=True)
    found = [f for f in metadata.files("nvidia-cuda-nvcc") or [] if f.name == "nvcc" and f.parent.name == "bin"]
    if not found:
        raise ToolkitError("nvidia-cuda-nvcc is installed but holds no bin/nvcc: check CUDA_PACKAGES")
    return Path(str(found[0].locate())).resolve().parent.parent


def link(target: Path, name: Path) -> None:
    if name.is_symlink() or name.exists():
        name.unlink()
    name.symlink_to(target)


def make_view(tree: Path, view: Path) -> None:
    """VIEW: a toolkit layout over PyPI's tree, with the plain library names and a driver link stub."""
    if view.exists():
        shutil.rmtree(view)
    (view / "bin").mkdir(parents=True)
    for tool in (tree / "bin").iterdir():  # nvcc finds nvcc.profile and its tools beside the path it was run as
        link(tool, view / "bin" / tool.name)
    for sub in ("include", "nvvm"):
        link(tree / sub, view / sub)
    lib64 = view / "lib64"
    (lib64 / "stubs").mkdir(parents=True)
    for library in (tree / "lib").iterdir():
        link(library, lib64 / library.name)
        plain = re.sub(r"\.so\.[\d.]+$", ".so", library.name)
        if plain != library.name:
            link(library, lib64 / plain)
    driver_stub(view / "include", lib64 / "stubs" / "libcuda.so")
    no_driver(lib64 / "stubs" / "libcuda.so", view)


def driver_stub(include: Path, out: Path) -> None:
    """A link stub for the driver library: every function cuda.h declares (under its real symbol name, cuMemAlloc_v2
    for cuMemAlloc), each returning CUDA_ERROR_STUB_LIBRARY, with the driver's soname. Linking against it records
    libcuda.so.1 as needed, so the real driver resolves those symbols when the server starts; a stub without the
    symbols would be dropped from the link, and the first VMM allocation on a GPU would die of an undefined symbol."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ToolkitError("no C compiler (cc) to make the driver link stub: install build-essential")
    declared = subprocess.run(
        [compiler, "-E", "-x", "c", "-I", str(include), "-"],
        input="#include <cuda.h>\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = sorted(set(re.findall(r"\bCUresult\s+(cu\w+)\s*\(", declared)))
    if "cuGetProcAddress_v2" not in names and "cuGetProcAddress" not in names:
        raise ToolkitError(f"{include}/cuda.h declares no cuGetProcAddress: not a CUDA driver API header")
    source = out.with_suffix(".c")
    source.write_text("".join(f"int {name}(void) {{ return {STUB_LIBRARY_ERROR}; }}\n" for name in names))
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(out), "-Wl,-soname,libcuda.so.1", str(source)], check=True)
    source.unlink()


def no_driver(stub: Path, view: Path) -> None:
    """VIEW/no-driver/libcuda.so.1: the stub, which the bench puts on the loader path only where no driver is
    installed, so that the CUDA build still starts there (on the CPU: the CUDA runtime finds no driver in it)."""
    (view / "no-driver").mkdir(exist_ok=True)
    link(stub, view / "no-driver" / "libcuda.so.1")


def machine_view(root: Path, view: Path) -> None:
    """VIEW/lib64 for a complete machine toolkit: links to its runtime libraries, for the server's loader path."""
    if view.exists():
        shutil.rmtree(view)
    (view / "lib64").mkdir(parents=True)
    for name in RUNTIME_LIBRARIES:
        folder = library_dir(root, name)
        assert folder is not None
        for library in folder.glob(f"{name}*"):
            link(library.resolve(), view / "lib64" / library.name)
    stubs = [root / sub / "stubs" / "libcuda.so" for sub in ("lib64", "lib", "targets/x86_64-linux/lib")]
    for stub in (s for s in stubs if s.exists()):
        no_driver(stub, view)
        break


def write_version(view: Path, cuda: tuple[int, int] | None) -> None:
    """VIEW/version and VIEW/compression: the CUDA the build is made with and how its kernels are compressed, which
    `make gpu-check` compares with the driver."""
    (view / "version").write_text(f"{cuda[0]}.{cuda[1]}\n" if cuda else "")
    (view / "compression").write_text(f"{COMPRESSION_MODE}\n")


def main(view: Path, architectures: str = "native") -> str:
    check_architectures(architectures)
    root, missing = machine_toolkit()
    if root is not None and not missing:
        log(f"the machine's CUDA {version_text(toolkit_cuda(root))} toolkit at {root}")
        check_driver(toolkit_cuda(root), f"the CUDA toolkit at {root}", "install a toolkit this driver runs")
        machine_view(root, view)
        write_version(view, toolkit_cuda(root))
        return f"-DCMAKE_CUDA_COMPILER={root}/bin/nvcc -DCUDAToolkit_ROOT={root} {COMPRESSION_FLAG}"
    where = f"the CUDA toolkit at {root}" if root else "no CUDA toolkit on this machine"
    log(f"{where}{' lacks ' + ', '.join(missing) if root else ''}: PyPI's CUDA packages instead")
    check_driver(parse_cuda(CUDA_PACKAGES[0].split("==")[1]), "PyPI's CUDA compiler", PYPI_FIX)
    log(f"installing {' '.join(CUDA_PACKAGES)} into {sys.prefix}")
    tree = install_pypi_toolkit()
    make_view(tree, view)
    log(f"PyPI's CUDA {version_text(toolkit_cuda(view))} in {tree}, viewed as a toolkit at {view}")
    write_version(view, toolkit_cuda(view))
    # Executables leave the driver's symbols (needed by libggml-cuda) to the loader, as llama.cpp's own CUDA builds do.
    return (
        f"-DCMAKE_CUDA_COMPILER={view}/bin/nvcc -DCUDAToolkit_ROOT={view} "
        f"-DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined {COMPRESSION_FLAG}"
    )


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    try:
        print(main(Path(sys.argv[1]).resolve(), *sys.argv[2:]))
    except (ToolkitError, subprocess.CalledProcessError) as e:
        sys.exit(f"make setup GPU=cuda: {e}")
