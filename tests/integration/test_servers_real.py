"""Server kinds against the real llama-server: embedded host processes, and compose's CPU profile (docker-compose)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.config import BenchConfig
from bench.containers.engine import LABEL, docker_client
from bench.containers.images import ensure_sandbox_image
from bench.servers.api import read_metrics, read_props
from bench.servers.compose import COMPOSE_PROJECT, ComposeServers
from bench.servers.cpu_image import ensure_llama_cpu_image
from bench.servers.embedded import EmbeddedServers

pytestmark = pytest.mark.llama


def test_embedded_servers_serve_the_requested_window_and_notice_a_death(tmp_path: Path) -> None:
    servers = EmbeddedServers(BenchConfig(jeff_ctx=512), tmp_path)
    try:
        endpoints = servers.start(1024)
        assert read_props(endpoints.flint_url).n_ctx == 1024
        assert endpoints.jeff_url and read_props(endpoints.jeff_url).n_ctx == 512
        assert "llamacpp:prompt_tokens_total" in read_metrics(endpoints.flint_url)
        assert servers.healthy()
        assert endpoints.server_pids and set(endpoints.server_pids) == {"flint", "jeff"}
        os.kill(endpoints.server_pids["flint"], signal.SIGKILL)
        servers.flint.proc.wait(10)  # type: ignore[union-attr]
        assert not servers.healthy()
        again = servers.start(1024)  # what the runner does after a death
        assert servers.healthy() and again.flint_url != ""
    finally:
        servers.stop()
    assert not servers.healthy()


@pytest.mark.docker
@pytest.mark.compose
def test_compose_cpu_profile_up_reachable_from_sandbox_network_and_down(tmp_path: Path) -> None:
    client: Any = docker_client()
    servers = ComposeServers(BenchConfig(jeff_ctx=512), gpu=False, cpu_image=ensure_llama_cpu_image(client))
    try:
        endpoints = servers.start(1024)
        assert read_props(endpoints.flint_url).n_ctx == 1024
        assert endpoints.server_containers and all(endpoints.server_containers.values())
        probe = (
            "import json, urllib.request\n"
            "props = json.load(urllib.request.urlopen('http://flint:8080/props', timeout=10))\n"
            "jeff = urllib.request.urlopen('http://jeff:8080/health', timeout=10).status\n"
            "print(json.dumps({'n_ctx': props['default_generation_settings']['n_ctx'], 'jeff': jeff}))\n"
        )
        output = client.containers.run(
            ensure_sandbox_image(client), ["python3", "-c", probe], network=endpoints.sandbox_network, remove=True,
            labels={LABEL: "sandbox"},
        )  # fmt: skip
        assert json.loads(output.decode().strip().splitlines()[-1]) == {"n_ctx": 1024, "jeff": 200}
    finally:
        servers.stop()
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={COMPOSE_PROJECT}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert left.stdout.strip() == ""
