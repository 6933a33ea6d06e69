"""Docker networking for sandboxes: the internal network they sit on, and a forwarder to host-side servers.

A sandbox container joins only an `--internal` network: no route out. Servers running in compose sit on that
network themselves. Servers running as host processes (embedded, or external URLs) are reached through one small
forwarder container that joins both the internal network and a bridge network whose gateway is this host; it answers
as `flint` and `jeff` on the internal network (docker/forward.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from bench.errors import SandboxError

LABEL = "agentbench.role"  # on containers and networks the bench creates (not on images: containers inherit those)
SANDBOX_NETWORK = "agentbench-sandbox"
BRIDGE_NETWORK = "agentbench-bridge"
FORWARDER_NAME = "agentbench-forwarder"
FLINT_PORT_IN_SANDBOX = 8080
JEFF_PORT_IN_SANDBOX = 8081


# Host-side interface names of the sandbox networks (ours, and compose.yaml's), so a firewall rule can name them.
SANDBOX_INTERFACES = ("agentbench-sbx", "agentbench-csbx")


def _network(client: Any, name: str, *, internal: bool, interface: str | None = None) -> Any:
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
    net = _network(client, BRIDGE_NETWORK, internal=False)
    net.reload()
    configs = net.attrs.get("IPAM", {}).get("Config") or []
    for config in configs:
        if config.get("Gateway"):
            return str(config["Gateway"])
    raise SandboxError(f"docker network {BRIDGE_NETWORK} has no gateway address; remove it with `docker network rm`")


def sandbox_network(client: Any) -> str:
    """The internal network for sandboxes reaching host-side servers, created and firewalled on first use."""
    _network(client, SANDBOX_NETWORK, internal=True, interface=SANDBOX_INTERFACES[0])
    warn_once(isolate_from_host(SANDBOX_INTERFACES[0]))
    return SANDBOX_NETWORK


_warned: set[str] = set()


def warn_once(message: str | None) -> None:
    if message and message not in _warned:
        _warned.add(message)
        print(f"bench: warning: {message}", file=sys.stderr)


class Forwarder:
    """The forwarder container: flint:8080 and jeff:8081 on the sandbox network, passed on to host:port targets."""

    def __init__(self, client: Any, image: str) -> None:
        self.client = client
        self.image = image
        self.container: Any = None

    def start(self, flint: tuple[str, int], jeff: tuple[str, int] | None) -> tuple[str, str | None]:
        """Start forwarding; returns the URLs a sandbox uses for Flint and Jeff."""
        self.stop()
        remove_container(self.client, FORWARDER_NAME)
        rules = [f"{FLINT_PORT_IN_SANDBOX}={flint[0]}:{flint[1]}"]
        if jeff:
            rules.append(f"{JEFF_PORT_IN_SANDBOX}={jeff[0]}:{jeff[1]}")
        _network(self.client, BRIDGE_NETWORK, internal=False)
        self.container = self.client.containers.run(
            self.image,
            ["python3", "/opt/agentbench/forward.py", *rules],
            name=FORWARDER_NAME,
            detach=True,
            network=BRIDGE_NETWORK,
            labels={LABEL: "forwarder"},
            user="10001",
        )
        self.client.networks.get(sandbox_network(self.client)).connect(self.container, aliases=["flint", "jeff"])
        self._wait_listening(len(rules))
        jeff_url = f"http://jeff:{JEFF_PORT_IN_SANDBOX}" if jeff else None
        return f"http://flint:{FLINT_PORT_IN_SANDBOX}", jeff_url

    def _wait_listening(self, rules: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.container.reload()
            if self.container.status != "running":
                break
            if self.container.logs().decode(errors="replace").count("forwarding") >= rules:
                return
            time.sleep(0.2)
        logs = self.container.logs().decode(errors="replace")[-400:]
        raise SandboxError(f"the forwarder container did not start listening: {logs}")

    def stop(self) -> None:
        if self.container is not None:
            remove_container(self.client, self.container.id)
            self.container = None


def remove_container(client: Any, name_or_id: str) -> None:
    import docker.errors

    with contextlib.suppress(docker.errors.NotFound):
        client.containers.get(name_or_id).remove(force=True)


def remove_leftovers(client: Any) -> int:
    """Remove containers a crashed bench left behind (found by label); returns how many."""
    leftovers = client.containers.list(all=True, filters={"label": LABEL})
    for container in leftovers:
        remove_container(client, container.id)
    return len(leftovers)
