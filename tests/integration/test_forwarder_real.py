"""Issue 19's attacks on the forwarder, from a container on the sandbox network, through the real forwarder
container, against the real CPU llama-server: six 60 MiB bodies at once, a 240 KB grammar with max_tokens 1e6,
n_probs 20000, bodies of nothing but arrays, a flood of idle connections. Each is refused; afterwards the
forwarder still runs (never killed for memory), the bench's health check through it passes, and the server's only
slot is idle."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_client, role_labels
from bench.containers.names import BenchNames
from bench.fixtures.fixture import load_fixture
from bench.llama.api import busy_slot, wait_idle
from bench.ownership import Ownership
from bench.run.instance import remove_instance
from bench.sandbox.docker import DockerSandboxes
from bench.servers.base import Endpoints
from bench.servers.embedded import EmbeddedServers

# One group: the module's real server behind its forwarder starts once, on one pytest-xdist worker.
pytestmark = [pytest.mark.docker, pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("forwarder-real")]

ATTACKS = r"""
import json, socket, threading

HOST, PORT = "flint", 8080
GRAMMAR = "root ::= " + " | ".join(f'"w{i}"' for i in range(20000))
TURNS = [{"role": "user", "content": "Say hi."}]
CHAT = b"POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


def status_of(raw):
    with socket.create_connection((HOST, PORT), timeout=120) as sock:
        sock.sendall(raw)
        line = sock.makefile("rb").readline()
        return int(line.split()[1]) if line else None


def post(body):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return status_of(CHAT % len(raw) + raw)


def at_once(count, send):
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(send())) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(statuses)


results = {}
# Each announces 60 MiB: the answer comes before a byte of the body is read (the old forwarder read them all).
results["six 60 MiB bodies"] = at_once(6, lambda: status_of(CHAT % (60 << 20)))
results["grammar"] = post({"messages": TURNS, "grammar": GRAMMAR, "max_tokens": 1000000})
results["max_tokens"] = post({"messages": TURNS, "max_tokens": 1000000})
results["n_probs"] = post({"messages": TURNS, "n_probs": 20000, "max_tokens": 100})
arrays = b"[" + b"[]," * 1300000 + b"[]]"  # 3.9 MB, under the size cap: a parse would cost some 100 MB each
results["six bodies of arrays"] = at_once(6, lambda: post(arrays))
idle = [socket.create_connection((HOST, PORT), timeout=60) for _ in range(12)]
results["twelve idle connections"] = sorted(int(s.makefile("rb").readline().split()[1]) for s in idle[8:])
for sock in idle:
    sock.close()
agent = {"messages": TURNS, "stream": False, "temperature": 0.0, "seed": 42}
results["the agent's request"] = post(agent)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Any, DockerSandboxes, EmbeddedServers, Endpoints]]:
    """The real CPU llama-server (one slot, a 1024-token window) behind this bench instance's forwarder."""
    client = docker_client()
    ownership = Ownership.new()
    ownership.docker = True
    config = BenchConfig(use_jeff=False, sampling={"temperature": 0.0, "seed": 42})
    sandboxes = DockerSandboxes(config, BenchNames(ownership.instance), docker=client, checkout=ROOT)
    servers = EmbeddedServers(
        config,
        tmp_path_factory.mktemp("servers"),
        host=sandboxes.server_host(),
        ownership=ownership,
        fixtures=[load_fixture("todo_repo", ROOT)],
        checkout=ROOT,
    )
    try:
        endpoints = servers.start(1024)
        sandboxes.connect(endpoints)
        yield client, sandboxes, servers, endpoints
    finally:
        servers.stop()
        sandboxes.close()
        remove_instance(ownership, client)


def test_the_forwarder_refuses_each_attack_and_the_slot_stays_idle(
    served: tuple[Any, DockerSandboxes, EmbeddedServers, Endpoints], tmp_path: Path
) -> None:
    client, sandboxes, servers, endpoints = served
    assert sandboxes.reach is not None

    output = client.containers.run(
        sandboxes.engine.image,
        ["python3", "-c", ATTACKS],
        network=sandboxes.reach.network,
        remove=True,
        labels=role_labels("sandbox"),
    )
    results = json.loads(output.decode().strip().splitlines()[-1])

    assert results["six 60 MiB bodies"] == [413] * 6
    assert (results["grammar"], results["max_tokens"], results["n_probs"]) == (400, 400, 400)
    assert results["six bodies of arrays"] == [400] * 6
    assert results["twelve idle connections"] == [503] * 4
    assert results["the agent's request"] == 200  # the filter passes what the agent sends
    forwarder = sandboxes.forwarder
    assert forwarder.container is not None
    forwarder.container.reload()
    state = forwarder.container.attrs["State"]
    assert (state["Status"], state["OOMKilled"], forwarder.container.attrs["RestartCount"]) == ("running", False, 0)
    memory = forwarder.container.stats(stream=False)["memory_stats"]
    peak = memory.get("max_usage") or memory.get("usage", 0)  # cgroup v1 keeps the peak; v2 only the current use
    assert peak < 128 * 2**20, f"the forwarder used {peak / 2**20:.0f} MiB"  # its limit is 256m (measured: 41 MiB)
    assert servers.healthy() and sandboxes.healthy()  # the latter through the forwarder: its /health and the server's
    assert busy_slot(endpoints.flint_url) is None and wait_idle(endpoints.urls, timeout_s=5) is None


def test_a_dead_forwarder_is_unhealthy_and_a_reconnect_brings_it_back(
    served: tuple[Any, DockerSandboxes, EmbeddedServers, Endpoints],
) -> None:
    _, sandboxes, servers, endpoints = served
    assert sandboxes.forwarder.container is not None
    sandboxes.forwarder.container.kill()

    assert servers.healthy() and not sandboxes.healthy()  # what the runner asks between runs
    sandboxes.connect(servers.start(endpoints.ctx))  # the runner's restart: servers, then the way to them
    assert sandboxes.healthy()
