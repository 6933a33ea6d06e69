"""Did a server the bench started on a GPU come up on its card? Its own log says, once it is healthy.

GPU servers log at verbosity 4 (LLAMA_ARG_LOG_VERBOSITY, bench.llama.gpu_pin): ggml's info lines name the CUDA
devices the process sees and the buffers it allocated (bench.llama.buffers). Pinned to one card, a server sees one
device, CUDA0, and its model buffer is on it:

    ggml_cuda_init: found 1 CUDA devices (Total VRAM: 81559 MiB):
      Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, VMM: yes, VRAM: 81559 MiB
    load_tensors:        CUDA0 model buffer size = 11536.00 MiB

A server whose CUDA did not start (a driver older than the build's CUDA, a CUDA_VISIBLE_DEVICES naming no device)
logs `ggml_cuda_init: failed to initialize CUDA: ...` and loads the model onto the CPU: that is a failure of the run
(infra_error), never a quiet CPU run of a 20B model.
"""

from __future__ import annotations

import re

from bench.llama.buffers import buffers_in_log, on_gpu

_FOUND = re.compile(r"ggml_cuda_init: found (\d+) CUDA devices")
_DEVICE = re.compile(r"^\s*Device 0: (.+?), compute capability", re.MULTILINE)
_FAILED = re.compile(r"ggml_cuda_init: failed to initialize CUDA: .+")
# Compose's `logs` puts the container's name before each line: `flint-1  | ` (v2), `flint_1  | ` (v1).
_COMPOSE_PREFIX = re.compile(r"^[\w.-]+[-_]\d+ *\| ?", re.MULTILINE)


def without_compose_prefix(log: str) -> str:
    """The server's own lines, as a host process logs them, from compose's log of its service."""
    return _COMPOSE_PREFIX.sub("", log)


def placement_problem(role: str, log: str, card_name: str = "") -> str | None:
    """Why `role` (a server started on a GPU) is not on its card, from its log; None when it is. `card_name`: what
    NVML calls the pinned card ("" when unknown), which the one device the server sees must be."""
    log = without_compose_prefix(log)
    model = [b.backend for b in buffers_in_log(log) if b.kind == "model"]
    if "model" not in on_gpu(buffers_in_log(log)):
        failed = _FAILED.search(log)
        seen = f"its model is in {' and '.join(model)} buffers" if model else "its log names no model buffer"
        return (
            f"{role} came up on the CPU, not on its GPU ({failed.group(0) if failed else seen}): check the build "
            "against the driver (make gpu-check) and gpu_device against nvidia-smi -L"
        )
    found = _FOUND.search(log)
    if found and found.group(1) != "1":
        return (
            f"{role} sees {found.group(1)} CUDA devices, not only its card: its pin (CUDA_VISIBLE_DEVICES) did not "
            "reach it, so -ngl 999 spreads the model over all of them"
        )
    device = _DEVICE.search(log)
    name = device.group(1).strip() if device else ""
    if card_name and name and not (name.startswith(card_name) or card_name.startswith(name)):
        return f"{role} runs on {name}, not on its card ({card_name})"
    return None
