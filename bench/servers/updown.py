"""`python -m bench up|down` (make up / make down): compose servers left running for interactive use.

`up` serves Flint on 127.0.0.1:$FLINT_PORT (default 8080) and Jeff on $JEFF_PORT (default 8081), on the GPU when
NVML finds one, else on CPU with the small model; then point the agent at them (docs/agent.md, "Running the agent").
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.nvidia_toolkit import container_toolkit
from bench.errors import ConfigError, PrerequisiteError
from bench.fixtures.fixture import fixtures_root, load_fixture
from bench.measure.nvml import nvidia_gpu_present
from bench.servers.compose import ComposeServers, make_compose_servers
from bench.servers.shared import fetch_served_models

log = logging.getLogger(__name__)
# The host ports `bench up` serves on unless $FLINT_PORT and $JEFF_PORT say otherwise (compose.yaml's defaults).
UP_PORTS = {"FLINT_PORT": 8080, "JEFF_PORT": 8081}


def _servers(config: BenchConfig, checkout: Path, *, build_image: bool) -> ComposeServers:
    root = fixtures_root(config.fixtures_root, checkout)
    fixtures = [load_fixture(name, root) for name in config.fixtures]  # what forced tool calls offer (flint_tools)
    client = docker_client()
    gpu = nvidia_gpu_present()
    if gpu and build_image and not container_toolkit(client.info()):  # said before a build of many minutes
        raise PrerequisiteError(
            "this host has an NVIDIA GPU, but Docker has no NVIDIA Container Toolkit (no nvidia runtime in docker "
            "info, no nvidia-container-cli): compose's GPU services cannot reach the card. Install the toolkit "
            "(docs/gpu.md), then make up again"
        )
    return make_compose_servers(config, client, gpu=gpu, build_image=build_image, fixtures=fixtures, checkout=checkout)


def up(config: BenchConfig, checkout: Path) -> int:
    """Flint at the settings' (first) window, Jeff at jeff_ctx, on the ports of $FLINT_PORT and $JEFF_PORT."""
    if len(config.ctx) != 1:
        raise ConfigError(f"bench up serves one window, not {config.ctx}: pass --ctx N")
    servers = _servers(config, checkout, build_image=True)
    fetch_served_models(config, servers.gpu)  # fetched under the cache's lock and checked, as a bench does
    flint_port, jeff_port = (int(os.environ.get(name) or default) for name, default in UP_PORTS.items())
    (ctx,) = config.ctx
    endpoints = servers.start(ctx, ports=(flint_port, jeff_port))
    where = "GPU" if servers.gpu else "CPU"
    print(f"Flint: {endpoints.flint_url}  Jeff: {endpoints.jeff_url}  ({where}, ctx {ctx}); stop with make down")
    return 0


def down(config: BenchConfig, checkout: Path) -> int:
    servers = _servers(config, checkout, build_image=False)  # down stops what runs, builds nothing
    for gpu in (True, False):  # whichever variant `up` started
        servers.gpu = gpu
        servers.env = dict(os.environ)
        servers.stop()
    log.info("servers stopped")
    return 0
