"""The podman kind: the docker kind's sandboxes, graders and forwarder in podman, through the Docker-compatible API
of its service (`podman system service`), which the docker SDK speaks. For cluster nodes without Docker.

What podman needs beyond that API, all of it here:
- the service's socket: $CONTAINER_HOST (podman's own variable), else the rootful or rootless default;
- explicit ulimits on every container: podman asks for default limits above what some hosts let a container set
  (`error setting rlimit type 7`), so every container this client creates gets lower ones;
- a tmpfs mount owned by the container's user: podman 4.3 has no uid=/gid= tmpfs options, its `U` option does that;
- a container on the bridge network before servers listen on its gateway: podman's bridges come up with their
  first container, and until then the gateway's address does not exist;
- a firewall rule that lets the sandbox network's members reach each other: where Docker also runs, the FORWARD
  chain drops what no rule accepts, and podman accepts nothing for an internal network;
- /etc/hosts entries for flint and jeff: podman's name server listens on the network's gateway, this host, which
  the sandbox's firewall rule shuts off (Docker's answers inside the container).
Compose servers run under Docker, so a podman sandbox reaches only servers on this host (embedded, external).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.containers.engine import LOG_CONFIG, SANDBOX_UID, remove_container
from bench.containers.names import BenchNames
from bench.containers.network import allow_within, bridge_gateway, end_allow_within, ensure_network, warn_once
from bench.errors import PrerequisiteError
from bench.sandbox.docker import DockerSandboxes
from bench.servers.base import Endpoints

ROOTFUL_SOCKET = "unix:///run/podman/podman.sock"
# nofile and nproc within what a container may set on the hosts measured (20000 and 96363 there); pids_limit and
# the memory limit, not these, are what bound a sandbox.
ULIMITS = {"nofile": 1024, "nproc": 1024}


def podman_url() -> str:
    """Where podman's API answers: $CONTAINER_HOST, else the rootful socket, else the user's (rootless)."""
    if os.environ.get("CONTAINER_HOST"):
        return os.environ["CONTAINER_HOST"]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return f"unix://{runtime}/podman/podman.sock" if os.geteuid() != 0 and runtime else ROOTFUL_SOCKET


def podman_client() -> Any:
    """A docker SDK client for podman's service, every container of which gets ULIMITS; or PrerequisiteError."""
    from docker.types import Ulimit

    import docker

    url = podman_url()
    try:
        if url.startswith("unix://") and not Path(url.removeprefix("unix://")).exists():
            raise FileNotFoundError(url)  # before the SDK, which leaves a socket open when its connect fails
        client = docker.DockerClient(base_url=url, timeout=60)
        client.ping()
    except Exception as e:
        raise PrerequisiteError(
            f"no podman API answers at {url} ({type(e).__name__}): start `podman system service --time=0 {url}` "
            "(or set CONTAINER_HOST to where it listens), or use --sandbox docker|local"
        ) from e
    limits = [Ulimit(name=name, soft=value, hard=value) for name, value in ULIMITS.items()]
    return PodmanClient(client, limits)


class PodmanClient:
    """A docker SDK client for podman's service that gives every new container what podman needs (see above)."""

    def __init__(self, client: Any, ulimits: list[Any]) -> None:
        self._client = client
        self.containers = _Containers(client.containers, ulimits)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Containers:
    def __init__(self, containers: Any, ulimits: list[Any]) -> None:
        self._containers = containers
        self._ulimits = ulimits

    def _for_podman(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        tmpfs = {path: _tmpfs_options(options) for path, options in (kwargs.get("tmpfs") or {}).items()}
        return {"ulimits": self._ulimits, **kwargs, **({"tmpfs": tmpfs} if tmpfs else {})}

    def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._containers.create(*args, **self._for_podman(kwargs))

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return self._containers.run(*args, **self._for_podman(kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._containers, name)


def _tmpfs_options(options: str) -> str:
    """Docker's tmpfs options in podman's words: uid=/gid= (the container's user, as the bench sets them) become U."""
    kept = [o for o in options.split(",") if not o.startswith(("uid=", "gid="))]
    return ",".join([*kept, "U"]) if len(kept) < len(options.split(",")) else options


class PodmanSandboxes(DockerSandboxes):
    """The podman kind (see the module docstring for what differs from the docker kind)."""

    kind = "podman"

    def __init__(self, config: BenchConfig, names: BenchNames, *, docker: Any = None, checkout: Path) -> None:
        super().__init__(config, names, checkout=checkout)
        self.holder: Any = None

    @staticmethod
    def _client(docker: Any) -> Any:
        return podman_client()  # never the bench's Docker client

    def server_host(self) -> str:
        if self.holder is None:
            self.holder = self._hold_bridge()
        return bridge_gateway(self.engine.client, self.engine.names)

    def _hold_bridge(self) -> Any:
        """A container that keeps the bridge network, and so its gateway address, up for the bench's length."""
        client, names = self.engine.client, self.engine.names
        ensure_network(client, names.bridge_network, internal=False, labels=names.labels("network"))
        remove_container(client, f"{names.prefix}-bridge-holder")
        return client.containers.run(
            self.engine.image,
            ["sleep", "infinity"],
            name=f"{names.prefix}-bridge-holder",
            detach=True,
            network=names.bridge_network,
            user=str(SANDBOX_UID),
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit="32m",
            pids_limit=8,
            labels=names.labels("bridge-holder"),
            log_config=LOG_CONFIG,
        )

    def connect(self, endpoints: Endpoints) -> None:
        super().connect(endpoints)
        assert self.reach is not None and self.forwarder.container is not None
        warn_once(allow_within(self.engine.names.sandbox_interface))
        self.forwarder.container.reload()
        address = self.forwarder.container.attrs["NetworkSettings"]["Networks"][self.reach.network]["IPAddress"]
        names = ["flint", "jeff"] if self.reach.jeff_url else ["flint"]
        self.reach = dataclasses.replace(self.reach, hosts=dict.fromkeys(names, address))

    def close(self) -> None:
        super().close()
        if self.holder is not None:
            remove_container(self.engine.client, self.holder.id)
            self.holder = None
        end_allow_within(self.engine.names.sandbox_interface)
