"""Docker networking for sandboxes: the internal network they sit on, its firewall rule, and the bridge network.

A sandbox container joins only an `--internal` network: no route out. Servers running in compose sit on that
network themselves. Servers running as host processes (embedded, or external URLs) are reached through one small
forwarder container (bench.containers.forwarder) that joins both the internal network and a bridge network whose
gateway is this host.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from bench.containers.engine import LABEL
from bench.errors import SandboxError

SANDBOX_NETWORK = "agentbench-sandbox"
BRIDGE_NETWORK = "agentbench-bridge"
FORWARDER_NAME = "agentbench-forwarder"
FLINT_PORT_IN_SANDBOX = 8080
JEFF_PORT_IN_SANDBOX = 8081


# Host-side interface names of the sandbox networks (ours, and compose.yaml's), so a firewall rule can name them.
SANDBOX_INTERFACES = ("agentbench-sbx", "agentbench-csbx")


def ensure_network(client: Any, name: str, *, internal: bool, interface: str | None = None) -> Any:
    found = client.networks.list(names=[name])
    for net in found:
        if net.name == name:
            return net
    options = {"com.docker.network.bridge.name": interface} if interface else None
    return client.networks.create(name, driver="bridge", internal=internal, options=options, labels={LABEL: "network"})


def isolate_from_host(interface: str) -> str | None:
    """Drop traffic from a sandbox network to this host's own addresses; returns why it could not, or None.

    An internal network has no route out, but its containers still reach the host itself (Docker gives the bridge
    an address, and the host's INPUT chain accepts), so any service listening on 0.0.0.0 here would be in reach.
    """
    if os.geteuid() != 0 or not shutil.which("iptables"):
        return f"not root or no iptables: sandboxes on {interface} can reach services listening on this host"
    rule = ["INPUT", "-i", interface, "-j", "DROP"]
    if subprocess.run(["iptables", "-C", *rule], capture_output=True).returncode == 0:
        return None
    added = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True)
    return None if added.returncode == 0 else f"iptables refused the sandbox rule: {added.stderr.strip()}"


def bridge_gateway(client: Any) -> str:
    """The host's address on the forwarder's bridge network: host-side servers listen there for the forwarder."""
    net = ensure_network(client, BRIDGE_NETWORK, internal=False)
    net.reload()
    configs = net.attrs.get("IPAM", {}).get("Config") or []
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
    raise SandboxError(f"docker network {BRIDGE_NETWORK} has no gateway address; remove it with `docker network rm`")


def sandbox_network(client: Any) -> str:
    """The internal network for sandboxes reaching host-side servers, created and firewalled on first use."""
    ensure_network(client, SANDBOX_NETWORK, internal=True, interface=SANDBOX_INTERFACES[0])
    warn_once(isolate_from_host(SANDBOX_INTERFACES[0]))
    return SANDBOX_NETWORK


_warned: set[str] = set()


def warn_once(message: str | None) -> None:
    if message and message not in _warned:
        _warned.add(message)
        print(f"bench: warning: {message}", file=sys.stderr)
