"""On a GPU host with a CUDA build of llama-server (`make setup GPU=cuda`): NVML's figure for a real server process
against the buffers that server logs as placed on the GPU, the check `make gpu-check` makes with the real models.

The small model on the GPU keeps it quick: its buffers are small, so what NVML shows beyond them is mostly the CUDA
context, the very allowance (CUDA_CONTEXT_MAX_MIB) the self-check grants. Run with `-s` to see the figures.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.gpu_check import memory_against_buffers
from bench.measure.roles import PidMatcher
from bench.measure.sampler import GpuSampler
from bench.servers.binaries import find_small_model
from bench.servers.choose import llama_gpu_devices
from bench.servers.process import LlamaProcess

pytestmark = [pytest.mark.gpu, pytest.mark.llama]


@pytest.mark.parametrize("ctx", [4096, 8192])
def test_nvml_shows_the_logged_gpu_buffers_plus_a_cuda_context(tmp_path: Path, ctx: int) -> None:
    devices = llama_gpu_devices()
    if not devices:
        pytest.skip("the installed llama-server sees no GPU: `make setup GPU=cuda` builds one that does")
    server = LlamaProcess(find_small_model(), ctx, tmp_path / "server.log", gpu=True, extra_args=["-lv", "4"])
    server.start(120)
    try:
        assert server.pid is not None
        sampler = GpuSampler(PidMatcher({"flint": server.pid}), interval_s=0.1)
        sampler.baseline()
        sampler.start()
        time.sleep(1.0)
        reading = sampler.stop()
        check = memory_against_buffers("flint", reading.peak_role_mib["flint"], server.log_text())
    finally:
        server.stop()
    print(f"\n{devices[0]} ctx {ctx}: {check.detail}")
    assert check.status == "ok", check.detail
