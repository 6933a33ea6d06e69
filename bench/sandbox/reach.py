"""How a container sandbox reaches Flint and Jeff: through the gates compose servers keep on their own network, or
through the bench's forwarder to servers on this host; either way on an internal network, firewalled off from this
host's own services.

Servers know nothing of this: they say where they answer on this host (Endpoints), and compose servers also where
their gates stand (Endpoints.gates), which only a sandbox of the same engine can join.
"""

from __future__ import annotations

import urllib.parse

from bench.containers.forwarder import Forwarder
from bench.containers.network import isolate_from_host, sandbox_network, warn_once
from bench.errors import PrerequisiteError
from bench.sandbox.base import Engine, Reach
from bench.servers.base import Endpoints

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def reach_servers(engine: Engine, forwarder: Forwarder, endpoints: Endpoints) -> Reach:
    """The servers as this engine's sandboxes reach them (the forwarder is started, or stopped, to match)."""
    gates = endpoints.gates
    if gates is not None and gates.engine == engine.kind:
        forwarder.stop()
        warn_once(isolate_from_host(engine.names.firewall_interfaces))  # the gates' network is named to match it
        return Reach(gates.network, gates.flint_url, gates.jeff_url)
    if gates is not None:
        raise PrerequisiteError(
            f"these servers' gates are on a {gates.engine} network, which {engine.kind} sandboxes cannot join: "
            f"use --sandbox {gates.engine}, or servers on this host (--servers embedded or external)"
        )
    flint = host_port(endpoints.flint_url, engine.kind)
    jeff = host_port(endpoints.jeff_url, engine.kind) if endpoints.jeff_url else None
    flint_url, jeff_url = forwarder.start(flint, jeff)
    return Reach(sandbox_network(engine.client, engine.names), flint_url, jeff_url)


def host_port(url: str, engine: str) -> tuple[str, int]:
    """Where the forwarder finds a server: its URL's host and port, which must not be this host's loopback."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if host in LOOPBACK:
        raise PrerequisiteError(
            f"{url} is on this host's loopback, which {engine} containers cannot reach: start llama-server with "
            f"--host on an address containers reach (e.g. the {engine} bridge gateway), or use --sandbox local"
        )
    return host, parsed.port or 80
