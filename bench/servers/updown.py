"""`python -m bench up|down` (make up / make down): compose servers left running for interactive use.

`up` serves Flint on 127.0.0.1:$FLINT_PORT (default 8080) and Jeff on $JEFF_PORT (default 8081), on the GPU when
NVML finds one, else on CPU with the small model; then point the agent at them (README "Running the agent").
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from bench.config import load_config
from bench.containers.engine import docker_client
from bench.fixtures.fixture import load_fixture
from bench.servers.compose import ComposeServers, make_compose_servers

log = logging.getLogger(__name__)


def _servers(args: argparse.Namespace, *, build_image: bool) -> ComposeServers:
    path = Path(args.config)
    config = load_config(path if path.exists() else None, {})
    fixtures = [load_fixture(name) for name in config.fixtures]  # what forced tool calls offer (flint_tools)
    return make_compose_servers(config, docker_client(), build_image=build_image, fixtures=fixtures)


def command(args: argparse.Namespace) -> int:
    servers = _servers(args, build_image=args.command == "up")  # down stops what runs, builds nothing
    if args.command == "down":
        for gpu in (True, False):  # whichever variant `up` started
            servers.gpu = gpu
            servers.env = dict(os.environ)
            servers.stop()
        log.info("servers stopped")
        return 0
    ports = (int(os.environ.get("FLINT_PORT", "8080")), int(os.environ.get("JEFF_PORT", "8081")))
    endpoints = servers.start(args.ctx, ports=ports)
    where = "GPU" if servers.gpu else "CPU"
    print(f"Flint: {endpoints.flint_url}  Jeff: {endpoints.jeff_url}  ({where}, ctx {args.ctx}); stop with make down")
    return 0
