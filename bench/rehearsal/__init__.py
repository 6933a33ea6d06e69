"""`make gpu-rehearsal` (`python3 -m bench.rehearsal`): what the bench's GPU side does on a real GPU, in one command
of at most 10 minutes, with no network and nothing beyond the repository but what it carries (.ci/gpu-day.sh runs it
there; docs/gpu.md has the exact command).

Steps, each under a deadline of its own inside the whole's (deadline.py), each figure a line of figures.jsonl the
moment it is measured (record.py), so that a command killed at its limit keeps them:
1. inventory: driver and the CUDA it runs, each GPU (name, UUID, memory, compute capability, MIG mode and
   instances, accounting mode), Docker and its runtimes, the NVIDIA Container Toolkit, local llama/CUDA images.
2. the NVML calls the sampler makes, timed: memory v1 and v2, process lists v3 and v2, handle by UUID.
3. a known allocation through libcuda (bench.measure.cuda_probe) in a child and in a grandchild process at 1, 8
   and 64 GiB, with the sampler's per-process peak and the device's own delta against it; a bare context first.
4. the sampler's CPU cost on one card and on all.
5. a CUDA llama-server (installed, $LLAMA_SERVER, --llama-wheel, or built there from --llama-source:
   build_llama.py): a tiny model written here, served on the GPU, its memory three ways (bench.llama.memory_check).

It imports only the standard library, nvidia-ml-py and the bench's own stdlib-only modules (plus httpx, numpy and
gguf for step 5), so it runs where the bench's dependencies are not installed.
"""
