"""A server that dies while loading is told in one line: the CUDA error where its log has one (a crash goes on to
print a backtrace, so the last line says nothing), and what to do when the driver cannot load the build's kernels."""

from __future__ import annotations

from bench.llama.load_errors import load_failure, telling_line, why_it_died

# What a CUDA 12.8+ llama-server compressed with -compress-mode=size logs on an R535 driver: its first kernel fails.
INVALID = """ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, VMM: yes
ggml-cuda.cu:97: CUDA error
CUDA error: device kernel image is invalid
  current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:2962
[New LWP 5559]
"""


def test_the_cuda_error_is_the_telling_line_and_the_compression_floor_the_fix() -> None:
    assert telling_line(INVALID) == "CUDA error: device kernel image is invalid"
    said = why_it_died(INVALID)
    assert said.startswith("CUDA error: device kernel image is invalid; this driver cannot load the build's kernels")
    assert "550.54.14 or later" in said and "-DGGML_CUDA_COMPRESSION_MODE=speed" in said and "\n" not in said


def test_other_deaths_keep_their_last_line_and_no_advice() -> None:
    log = "llama_model_load: error loading model: invalid magic\nmain: exiting due to model loading error\n\n"
    assert why_it_died(log) == "main: exiting due to model loading error"
    assert load_failure(log) == "" and telling_line("") == "(its log is empty)"
