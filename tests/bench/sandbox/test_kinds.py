"""The sandbox kinds without an engine: the registry, `auto`, podman's client and socket, and how a container sandbox
chooses its way to the servers (the real engines: tests/integration/test_docker_sandbox.py, test_podman_sandbox.py)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from agent.server import Props
from bench.containers.names import BenchNames
from bench.errors import PrerequisiteError
from bench.sandbox import reach
from bench.sandbox.base import Engine
from bench.sandbox.kinds import KINDS, choose_sandbox
from bench.sandbox.podman import ROOTFUL_SOCKET, PodmanClient, podman_url
from bench.servers.base import Endpoints, Gates
from bench.setting_types import SandboxKind

PROPS = Props(n_ctx=4096, model="f.gguf", build="b1", supports_tool_calls=True)


def test_every_sandbox_setting_but_auto_names_a_kind() -> None:
    assert set(get_args(SandboxKind)) == {"auto", *KINDS}


def test_auto_takes_docker_when_it_answers_else_podman_else_local(monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose_sandbox("podman", object()).kind == "podman"  # asked for: taken as asked
    assert choose_sandbox("auto", object()).kind == "docker"
    monkeypatch.setenv("CONTAINER_HOST", "unix:///nonexistent/podman.sock")
    choice = choose_sandbox("auto", None)
    assert choice.kind == "local" and "neither" in choice.reason


def test_podman_is_found_by_container_host_else_the_rootful_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTAINER_HOST", "unix:///tmp/own.sock")
    assert podman_url() == "unix:///tmp/own.sock"
    monkeypatch.delenv("CONTAINER_HOST")
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert podman_url() == ROOTFUL_SOCKET


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def create(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("create", kwargs))

    def run(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("run", kwargs))

    def list(self) -> str:
        return "passed through"


class FakeSdk:
    def __init__(self) -> None:
        self.containers = Recorder()
        self.networks = "networks"


def test_podmans_client_gives_every_container_ulimits_and_tmpfs_owners_it_understands() -> None:
    sdk = FakeSdk()
    client = PodmanClient(sdk, ["LIMITS"])
    client.containers.create(image="i", tmpfs={"/grade": "size=1m,mode=0700,uid=5,gid=5,exec", "/tmp": "size=2m"})
    client.containers.run(image="i", ulimits=["OWN"])
    (_, created), (_, ran) = sdk.containers.calls
    assert created["ulimits"] == ["LIMITS"]
    assert created["tmpfs"] == {"/grade": "size=1m,mode=0700,exec,U", "/tmp": "size=2m"}
    assert ran["ulimits"] == ["OWN"] and "tmpfs" not in ran  # what the caller gives wins
    assert client.networks == "networks" and client.containers.list() == "passed through"


class FakeForwarder:
    def __init__(self) -> None:
        self.started: list[Any] = []
        self.stopped = 0

    def start(self, flint: Any, jeff: Any) -> tuple[str, str | None]:
        self.started.append((flint, jeff))
        return "http://flint:8080", "http://jeff:8081" if jeff else None

    def stop(self) -> None:
        self.stopped += 1


def engine(kind: str) -> Engine:
    return Engine(kind, object(), "image", BenchNames("0123abcd"))


def test_a_sandbox_joins_the_gates_of_its_own_engine_without_a_forwarder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "isolate_from_host", lambda interfaces: None)
    gates = Gates("docker", "agentbench-x_sandbox", "http://flint:8080", None)
    forwarder: Any = FakeForwarder()
    endpoints = Endpoints(4096, "http://127.0.0.1:1", PROPS, None, gates=gates)
    found = reach.reach_servers(engine("docker"), forwarder, endpoints)
    assert (found.network, found.flint_url, found.jeff_url) == ("agentbench-x_sandbox", "http://flint:8080", None)
    assert forwarder.started == [] and forwarder.stopped == 1


def test_gates_of_another_engine_or_a_loopback_server_are_refused_with_what_to_do() -> None:
    compose = Endpoints(
        4096, "http://127.0.0.1:1", PROPS, None, gates=Gates("docker", "net", "http://flint:8080", None)
    )
    on_loopback = Endpoints(4096, "http://127.0.0.1:1", PROPS, None)
    forwarder: Any = FakeForwarder()
    with pytest.raises(PrerequisiteError, match="--sandbox docker"):
        reach.reach_servers(engine("podman"), forwarder, compose)
    with pytest.raises(PrerequisiteError, match="loopback, which podman containers cannot reach"):
        reach.reach_servers(engine("podman"), forwarder, on_loopback)
    assert forwarder.started == []


def test_servers_on_this_host_are_reached_through_the_forwarder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reach, "sandbox_network", lambda client, names: names.sandbox_network)
    forwarder: Any = FakeForwarder()
    endpoints = Endpoints(4096, "http://10.0.0.1:4000", PROPS, None, jeff_url="http://10.0.0.1:4001", jeff=PROPS)
    found = reach.reach_servers(engine("docker"), forwarder, endpoints)
    assert forwarder.started == [(("10.0.0.1", 4000), ("10.0.0.1", 4001))]
    assert (found.network, found.jeff_url) == ("agentbench-0123abcd-sandbox", "http://jeff:8081")
