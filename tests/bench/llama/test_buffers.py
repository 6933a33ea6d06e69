"""llama-server's buffer sizes from its own log, and which of them sit in GPU memory."""

from __future__ import annotations

from pathlib import Path

from bench.gpu_check import Check, table
from bench.llama.buffers import BreakdownRow, Buffer, breakdown_in_log, buffers_in_log, on_gpu
from bench.llama.memory_check import ServerMemory, compare

DATA = Path(__file__).parent / "data"
# A real log of this build (CPU, SmolLM2-135M, -c 4096 -np 1 -lv 4): the library logs its buffers from -lv 4.
CPU_LOG = (DATA / "buffers-cpu-b11434.log").read_text()
# A real log of this build stopped with SIGTERM (CPU, SmolLM2-135M, -c 1024 -lv 4, one request): it prints the memory
# breakdown while fitting at start and again at exit.
BREAKDOWN_LOG = (DATA / "breakdown-cpu-b11434.log").read_text()
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


# A breakdown as common/fit.cpp prints it at exit (template_gpu, numbers right-aligned), for the buffers above.
GPU_BREAKDOWN = """\
0.09.100.001 I common_memory_breakdown_print: | memory breakdown [MiB] | total   free    self   model   context   compute    unaccounted |
0.09.100.002 I common_memory_breakdown_print: |   - CUDA0 (H200)       | 143771 = 130112 + (12033 = 11536 +      99 +     398) +        1626 |
0.09.100.003 I common_memory_breakdown_print: |   - Host               |                      14 =     0 +       0 +      13                |
"""  # noqa: E501
BUFFERS = 11536.00 + 99.00 + 398.38


def memory(at_rest: int | None, peak: int | None, context: int | None = 400, log: str = GPU_LINES + GPU_BREAKDOWN):
    return ServerMemory.from_log("flint", log, at_rest, peak, context)


def test_the_exit_breakdown_of_a_real_cpu_log_and_of_a_gpu_table_is_read() -> None:
    assert breakdown_in_log(BREAKDOWN_LOG) == [BreakdownRow("Host", 130, 92, 22, 15)]  # the last table: at exit
    device, host = breakdown_in_log(GPU_BREAKDOWN)
    assert device == BreakdownRow("CUDA0", 12033, 11536, 99, 398, 143771, 130112, 1626)
    assert host == BreakdownRow("Host", 14, 0, 0, 13)
    assert breakdown_in_log(CPU_LOG.split("common_memory_breakdown_print")[0]) == []


def test_nvml_against_buffers_and_breakdown_prints_the_measured_allowance() -> None:
    status, detail = compare(memory(int(BUFFERS) + 450, int(BUFFERS) + 600))
    assert status == "ok", detail
    assert "the request at the window added +150 MiB" in detail
    assert "bare CUDA context on this card: 400 MiB" in detail
    assert "allowed excess (context + growth, measured): 550 MiB, actual 600 MiB (+50 beyond it" in detail
    assert "unaccounted CUDA0 1626 MiB" in detail


def test_nvml_below_the_buffers_or_two_llama_accounts_that_disagree_fail() -> None:
    status, detail = compare(memory(int(BUFFERS) - 300, int(BUFFERS) - 200))
    assert status == "FAIL" and "below the buffers" in detail
    other = GPU_BREAKDOWN.replace("(12033 = 11536", "(13033 = 12536")
    status, detail = compare(memory(int(BUFFERS) + 400, int(BUFFERS) + 500, log=GPU_LINES + other))
    assert status == "FAIL" and "the exit breakdown says 13033 MiB, the buffer lines 12033 MiB" in detail
    status, detail = compare(memory(int(BUFFERS) + 400, int(BUFFERS) + 500, log=GPU_LINES))
    assert status == "FAIL" and "no memory breakdown at exit" in detail
    assert compare(memory(None, None))[0] == "FAIL"
    status, detail = compare(ServerMemory.from_log("jeff", CPU_LOG, 500, 500, 400))
    assert status == "FAIL" and "CPU" in detail
    assert "bare CUDA context on this card: not measured" in compare(memory(12500, 12600, context=None))[1]


def test_the_table_has_one_line_per_check() -> None:
    text = table([Check("NVML", "ok", "driver 580"), Check("compose with GPU reservation", "skipped", "no toolkit")])
    lines = text.splitlines()
    assert len(lines) == 4 and lines[2].split()[:2] == ["NVML", "ok"] and "skipped" in lines[3]
