"""The forwarder container: answers as `flint` and `jeff` on the sandbox network and passes requests on to servers
running on this host (docker/forward.py): chat (only the agent's requests, Flint's with the run's sampling settings),
props and health; everything else is refused. Its health is read through it, from this host, as a sandbox would."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

from bench import http_client
from bench.containers.engine import LOG_CONFIG, SANDBOX_UID, remove_container
from bench.containers.names import BenchNames
from bench.containers.network import FLINT_PORT_IN_SANDBOX, JEFF_PORT_IN_SANDBOX, ensure_network, sandbox_network
from bench.errors import SandboxError


class Forwarder:
    """The forwarder container: flint:8080 and jeff:8081 on the sandbox network, passed on to host:port targets."""

    def __init__(self, client: Any, image: str, names: BenchNames, sampling: Mapping[str, Any] | None = None) -> None:
        self.client = client
        self.image = image
        self.names = names
        self.sampling = sampling  # Flint's sampling settings (the run's); None: the usual numeric ones pass
        self.container: Any = None
        self.ports: list[int] = []

    def start(self, flint: tuple[str, int], jeff: tuple[str, int] | None) -> tuple[str, str | None]:
        """Start forwarding; returns the URLs a sandbox uses for Flint and Jeff."""
        self.stop()
        names = self.names
        remove_container(self.client, names.forwarder)
        rules = [f"{FLINT_PORT_IN_SANDBOX}={flint[0]}:{flint[1]}"]
        if jeff:
            rules.append(f"{JEFF_PORT_IN_SANDBOX}={jeff[0]}:{jeff[1]}")
        if self.sampling is not None:
            rules += ["--sampling", f"{FLINT_PORT_IN_SANDBOX}={json.dumps(dict(self.sampling))}"]
        self.ports = [FLINT_PORT_IN_SANDBOX, *([JEFF_PORT_IN_SANDBOX] if jeff else [])]
        ensure_network(self.client, names.bridge_network, internal=False, labels=names.labels("network"))
        self.container = self.client.containers.run(
            self.image,
            ["python3", "/opt/agentbench/forward.py", *rules],
            name=names.forwarder,
            detach=True,
            network=names.bridge_network,
            labels=names.labels("forwarder"),
            log_config=LOG_CONFIG,
            user=str(SANDBOX_UID),
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit="256m",
            pids_limit=64,
        )
        self.client.networks.get(sandbox_network(self.client, names)).connect(self.container, aliases=["flint", "jeff"])
        self._wait_listening(len(self.ports))
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

    def healthy(self) -> bool:
        """The container runs and each server's /health answers 200 through it (from this host, on its bridge
        network): a dead or stuck forwarder, or a server behind it, is unhealthy."""
        import docker.errors

        if self.container is None:
            return False
        try:
            self.container.reload()
            address = self.container.attrs["NetworkSettings"]["Networks"][self.names.bridge_network]["IPAddress"]
        except (docker.errors.DockerException, KeyError, TypeError):
            return False
        if self.container.status != "running" or not address:
            return False
        try:
            with http_client.client(timeout=httpx.Timeout(5.0, connect=2.0)) as http:
                return all(http.get(f"http://{address}:{port}/health").status_code == 200 for port in self.ports)
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.container is not None:
            remove_container(self.client, self.container.id)
            self.container = None
