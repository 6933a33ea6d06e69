"""Container networking for sandboxes: the internal network they sit on, its firewall rules, and the bridge network.

A sandbox container joins only an `--internal` network: no route out. Compose servers put gates of their own on
such a network (compose.yaml). Servers running as host processes (embedded, or external URLs) are reached through
one small forwarder container (bench.containers.forwarder) that joins both the internal network and a bridge
network whose gateway is this host. Each bench instance has networks of its own (bench.containers.names): a sandbox
of one bench never shares a network with another bench's.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from typing import Any

from bench.containers.names import BenchNames
from bench.errors import SandboxError

log = logging.getLogger(__name__)

FLINT_PORT_IN_SANDBOX = 8080
JEFF_PORT_IN_SANDBOX = 8081


def ensure_network(
    client: Any, name: str, *, internal: bool, labels: dict[str, str], interface: str | None = None
) -> Any:
    found = client.networks.list(names=[name])
    for net in found:
        if net.name == name:
            return net
    options = {"com.docker.network.bridge.name": interface} if interface else None
    return client.networks.create(name, driver="bridge", internal=internal, options=options, labels=labels)


def _drop_rule(interfaces: str) -> list[str]:
    return ["INPUT", "-i", interfaces, "-j", "DROP"]


def _within_rule(interface: str) -> list[str]:
    return ["FORWARD", "-i", interface, "-o", interface, "-j", "ACCEPT"]


def _add_rule(rule: list[str], risk: str) -> str | None:
    """Insert an iptables rule unless it is there; returns why it could not and what that means, or None."""
    if os.geteuid() != 0 or not shutil.which("iptables"):
        return f"not root or no iptables: {risk}"
    if subprocess.run(["iptables", "-C", *rule], capture_output=True).returncode == 0:
        return None
    added = subprocess.run(["iptables", "-I", *rule], capture_output=True, text=True)
    return None if added.returncode == 0 else f"iptables refused a rule ({added.stderr.strip()}): {risk}"


def _remove_rule(rule: list[str]) -> bool:
    """Remove every copy of an iptables rule; True when one was removed."""
    if os.geteuid() != 0 or not shutil.which("iptables"):
        return False
    removed = False
    while subprocess.run(["iptables", "-D", *rule], capture_output=True).returncode == 0:
        removed = True
    return removed


def isolate_from_host(interfaces: str) -> str | None:
    """Drop traffic from sandbox interfaces (an iptables `-i` name or pattern) to this host's own addresses;
    returns why it could not, or None.

    An internal network has no route out, but its containers still reach the host itself (the engine gives the
    bridge an address, and the host's INPUT chain accepts), so any service listening on 0.0.0.0 here would be in
    reach.
    """
    return _add_rule(_drop_rule(interfaces), f"sandboxes on {interfaces} can reach services listening on this host")


def end_isolation(interfaces: str) -> bool:
    """Remove the rule isolate_from_host added for `interfaces` (every copy of it); True when one was removed."""
    return _remove_rule(_drop_rule(interfaces))


def allow_within(interface: str) -> str | None:
    """Let the containers on one bridge reach each other where the FORWARD chain drops what no rule accepts (Docker
    sets that policy, and podman's netavark accepts nothing for an internal network); returns why not, or None."""
    return _add_rule(_within_rule(interface), f"containers on {interface} may not reach each other")


def end_allow_within(interface: str) -> bool:
    return _remove_rule(_within_rule(interface))


def bridge_gateway(client: Any, names: BenchNames) -> str:
    """The host's address on the forwarder's bridge network: host-side servers listen there for the forwarder."""
    net = ensure_network(client, names.bridge_network, internal=False, labels=names.labels("network"))
    net.reload()
    configs = net.attrs.get("IPAM", {}).get("Config") or []
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
    raise SandboxError(f"docker network {names.bridge_network} has no gateway address")


def sandbox_network(client: Any, names: BenchNames) -> str:
    """The internal network for sandboxes reaching host-side servers, created and firewalled on first use."""
    ensure_network(
        client, names.sandbox_network, internal=True, labels=names.labels("network"), interface=names.sandbox_interface
    )
    warn_once(isolate_from_host(names.firewall_interfaces))
    return names.sandbox_network


_warned: set[str] = set()


def warn_once(message: str | None) -> None:
    if message and message not in _warned:
        _warned.add(message)
        log.warning("%s", message)
