"""Each choice once per bench: the Docker engine probed once, the GPUs looked at once, /props read once per server
start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.config import BenchConfig
from bench.run import choices
from bench.servers.choose import HostGpu
from bench.servers.external import ExternalServers
from bench.testing.fake_llama import FakeLlama

NO_GPU = HostGpu("", False, "", ())


def test_a_bench_probes_the_engine_and_the_gpus_once_and_builds_on_what_it_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(choices, "docker_or_none", lambda: calls.append("docker") or None)
    monkeypatch.setattr(choices, "probe_host", lambda docker: calls.append("gpu") or NO_GPU)
    monkeypatch.setattr("bench.servers.embedded.embedded_on_gpu", lambda: pytest.fail("the GPUs were asked again"))
    monkeypatch.setenv("CONTAINER_HOST", "unix:///nonexistent/podman.sock")  # no podman either: local

    factory = choices.Factory.for_config(BenchConfig(sandbox="auto", servers="auto"), ROOT)
    servers: Any = factory.make_servers(tmp_path, [])

    assert calls == ["docker", "gpu"]
    assert (factory.sandbox.kind, factory.servers.kind) == ("local", "embedded")
    assert servers.gpu is False and servers.host == "127.0.0.1"


def test_nothing_is_probed_that_the_settings_do_not_need(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choices, "docker_or_none", lambda: pytest.fail("Docker was probed"))
    monkeypatch.setattr(choices, "probe_host", lambda docker: pytest.fail("the GPUs were probed"))
    factory = choices.Factory.for_config(BenchConfig(sandbox="local", servers="external", flint_url="http://h:1"), ROOT)
    assert (factory.sandbox.kind, factory.servers.kind) == ("local", "external")


def test_a_start_reads_each_servers_props_once() -> None:
    with FakeLlama() as flint, FakeLlama(model_path="/models/jeff.gguf") as jeff:
        endpoints = ExternalServers(BenchConfig(flint_url=flint.url, jeff_url=jeff.url)).start(4096)
        assert endpoints.jeff is not None and endpoints.jeff.model == "jeff.gguf"  # the alias /props names
        for server in (flint, jeff):
            assert [path for method, path in server.hits if path == "/props"] == ["/props"]
