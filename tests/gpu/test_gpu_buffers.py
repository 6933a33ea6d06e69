"""On a GPU host with a CUDA build of llama-server (`make setup GPU=cuda`): NVML's figure for a real server process
against the buffers that server logs and the breakdown it prints at exit, the check `make gpu-check` makes with the
real models, with the allowed excess measured (a bare CUDA context in a probe process, and the growth across a
request at the window). The small model on the GPU keeps it quick. Run with `-s` to see the figures.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench import ROOT
from bench.llama.binaries import find_small_model
from bench.llama.devices import llama_gpu_devices
from bench.llama.gpu_pin import resolve_pin
from bench.llama.memory_check import ServerMemory, bare_context_mib, compare
from bench.llama.process import LlamaProcess
from bench.llama.warmup import window_request
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler

pytestmark = [pytest.mark.gpu, pytest.mark.llama]


@pytest.mark.parametrize("ctx", [4096, 8192])
def test_nvml_shows_the_logged_gpu_buffers_plus_a_measured_excess(tmp_path: Path, ctx: int) -> None:
    devices = llama_gpu_devices()
    if not devices:
        pytest.skip("the installed llama-server sees no GPU: `make setup GPU=cuda` builds one that does")
    pin = resolve_pin("0")
    context = bare_context_mib(pin.device, 0.1, ROOT)
    server = LlamaProcess(find_small_model(), ctx, tmp_path / "server.log", gpu=True, extra_args=["-lv", "4"], pin=pin)
    server.start(120)
    try:
        assert server.pid is not None
        sampler = GpuSampler(PidMatcher({"flint": server.pid}), device_uuids=pin.sampler_uuids(), interval_s=0.1)
        sampler.baseline()
        sampler.start()
        window_request(server.url, ctx)
        time.sleep(0.3)
        reading = sampler.stop()
    finally:
        server.stop()
    memory = ServerMemory.from_log(
        "flint", server.log_text(), reading.baseline_role_mib["flint"], reading.peak_role_mib["flint"], context
    )
    status, detail = compare(memory)
    print(f"\n{devices[0]} ctx {ctx}: {detail}")
    assert status == "ok", detail
