"""llama-server's buffer sizes from its own log, and which of them sit in GPU memory."""

from __future__ import annotations

from pathlib import Path

from bench.gpu_check import CUDA_CONTEXT_MAX_MIB, Check, memory_against_buffers, table
from bench.servers.buffers import Buffer, buffers_in_log, on_gpu

DATA = Path(__file__).parent / "data"
# A real log of this build (CPU, SmolLM2-135M, -c 4096 -np 1 -lv 4): the library logs its buffers from -lv 4.
CPU_LOG = (DATA / "buffers-cpu-b11434.log").read_text()
# The same lines as a CUDA build writes them: the buffer's backend is its name (ggml_backend_buffer_name).
GPU_LINES = """\
0.01.512.001 I load_tensors:   CPU_Mapped model buffer size =   586.82 MiB
0.01.512.002 I load_tensors:        CUDA0 model buffer size = 11536.00 MiB
0.01.601.100 I llama_context:  CUDA_Host  output buffer size =     0.77 MiB
0.01.602.000 I llama_kv_cache:        CUDA0 KV buffer size =    96.00 MiB
0.01.602.500 I llama_kv_cache:        CUDA0 KV buffer size =     3.00 MiB
0.01.700.000 I sched_reserve:        CUDA0 compute buffer size =   398.38 MiB
0.01.700.001 I sched_reserve:    CUDA_Host compute buffer size =    13.08 MiB
"""


def test_every_buffer_of_a_real_cpu_log_is_read() -> None:
    assert buffers_in_log(CPU_LOG) == [
        Buffer("CPU_Mapped", "model", 92.10),
        Buffer("CPU", "output", 0.19),
        Buffer("CPU", "KV", 90.00),
        Buffer("CPU", "compute", 18.64),
    ]
    assert on_gpu(buffers_in_log(CPU_LOG)) == {}  # all of it is host memory


def test_only_device_buffers_count_as_gpu_memory_and_kv_parts_add_up() -> None:
    assert on_gpu(buffers_in_log(GPU_LINES)) == {"model": 11536.00, "KV": 99.00, "compute": 398.38}


def test_nvml_must_exceed_the_buffers_by_no_more_than_a_cuda_context() -> None:
    buffers = 11536.00 + 99.00 + 398.38
    ok = memory_against_buffers("flint", int(buffers) + 300, GPU_LINES)
    assert ok.status == "ok" and "+300 MiB" in ok.detail.replace("+299", "+300")
    assert memory_against_buffers("flint", int(buffers) - 200, GPU_LINES).status == "FAIL"
    assert memory_against_buffers("flint", int(buffers) + CUDA_CONTEXT_MAX_MIB + 50, GPU_LINES).status == "FAIL"
    assert memory_against_buffers("flint", None, GPU_LINES).status == "FAIL"
    on_cpu = memory_against_buffers("jeff", 500, CPU_LOG)
    assert on_cpu.status == "FAIL" and "CPU" in on_cpu.detail


def test_the_table_has_one_line_per_check() -> None:
    text = table([Check("NVML", "ok", "driver 580"), Check("compose with GPU reservation", "skipped", "no toolkit")])
    lines = text.splitlines()
    assert len(lines) == 4 and lines[2].split()[:2] == ["NVML", "ok"] and "skipped" in lines[3]
