"""Every name a bench instance gives Docker and the host, derived from its instance id (bench.ownership), so that
two benches on one host never share a network, a container, a compose project or a firewall rule.

    agentbench-<id>-bridge      bridge network: the forwarder's way to servers on this host
    agentbench-<id>-sandbox     internal network: the sandboxes, and the forwarder as flint and jeff
    agentbench-<id>-forwarder   the forwarder container
    agentbench-<id>             the compose project (its sandbox network is agentbench-<id>_sandbox)
    ab<id>s, ab<id>c            host interfaces of the two sandbox networks (Linux allows 15 characters)
    ab<id>+                     the firewall rule's interface pattern: both sandbox interfaces, and nothing else

Containers, networks and volumes also carry OWNER_LABEL=<id>, by which the bench removes its own at the end and a
later bench removes a killed one's, never another live bench's.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.containers.engine import role_labels

OWNER_LABEL = "agentbench.instance"  # the id of the bench instance that created the container, network or volume
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"  # set by Compose on what it creates


@dataclass(frozen=True)
class BenchNames:
    instance: str  # 8 hex digits (bench.ownership.new_instance_id)

    @property
    def prefix(self) -> str:
        return f"agentbench-{self.instance}"

    @property
    def bridge_network(self) -> str:
        return f"{self.prefix}-bridge"

    @property
    def sandbox_network(self) -> str:
        return f"{self.prefix}-sandbox"

    @property
    def forwarder(self) -> str:
        return f"{self.prefix}-forwarder"

    @property
    def compose_project(self) -> str:
        return self.prefix

    @property
    def sandbox_interface(self) -> str:
        return f"ab{self.instance}s"

    @property
    def compose_interface(self) -> str:
        return f"ab{self.instance}c"

    @property
    def firewall_interfaces(self) -> str:
        """iptables' `-i` pattern (a trailing + matches any suffix): this instance's sandbox interfaces only."""
        return f"ab{self.instance}+"

    def labels(self, role: str) -> dict[str, str]:
        return {**role_labels(role), OWNER_LABEL: self.instance}
