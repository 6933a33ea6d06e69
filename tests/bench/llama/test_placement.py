"""The placement check reads a compose service's log as it reads a host server's (bench/llama/placement.py):
compose puts `flint-1  | ` (v2) or `flint_1  | ` (v1) before every line, which hid the device line from the card-name
test. The lines are in the formats of tests/host_matrix/data/llama-cuda-startup.txt."""

from __future__ import annotations

import pytest

from bench.llama.placement import placement_problem, without_compose_prefix

HOST_LOG = """\
ggml_cuda_init: found 1 CUDA devices (Total VRAM: 81559 MiB):
  Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, VMM: yes, VRAM: 81559 MiB
load_tensors: offloaded 25/25 layers to GPU
load_tensors:   CPU_Mapped model buffer size =    586.82 MiB
load_tensors:        CUDA0 model buffer size = 11536.00 MiB
llama_kv_cache:      CUDA0 KV buffer size =   192.00 MiB
"""


def prefixed(log: str, prefix: str) -> str:
    return "".join(f"{prefix}{line}\n" for line in log.splitlines())


@pytest.mark.parametrize("prefix", ["", "flint-1  | ", "flint_1  | ", "agentbench-3f2a-flint-1  | "])
def test_the_card_name_is_read_through_composes_prefix(prefix: str) -> None:
    log = prefixed(HOST_LOG, prefix)
    assert without_compose_prefix(log) == HOST_LOG
    assert placement_problem("Flint", log, "NVIDIA H100 80GB HBM3") is None
    assert placement_problem("Flint", log, "NVIDIA A100-SXM4-80GB") == (
        "Flint runs on NVIDIA H100 80GB HBM3, not on its card (NVIDIA A100-SXM4-80GB)"
    )


def test_two_devices_and_a_cpu_start_are_seen_in_a_compose_log() -> None:
    two = prefixed(HOST_LOG.replace("found 1 CUDA", "found 2 CUDA"), "jeff-1  | ")
    assert placement_problem("Jeff", two, "NVIDIA H100 80GB HBM3").startswith("Jeff sees 2 CUDA devices")
    cpu = prefixed(
        "ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version\n"
        "load_tensors:   CPU_Mapped model buffer size =  11536.00 MiB\n",
        "flint-1  | ",
    )
    problem = placement_problem("Flint", cpu)
    assert problem is not None and problem.startswith(
        "Flint came up on the CPU, not on its GPU (ggml_cuda_init: failed"
    )
