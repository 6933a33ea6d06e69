"""The server kinds' registry: the names `servers:` takes, what each kind tells the runner, and an unknown kind
refused with the known ones (making them for real: tests/integration/test_servers_real.py)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from bench import ROOT
from bench.config import BenchConfig, Choice
from bench.errors import ConfigError
from bench.run import choices
from bench.servers import kinds
from bench.servers.choose import HostGpu
from bench.servers.external import ExternalServers
from bench.setting_types import ServerKind

NO_GPU = HostGpu("", False, "", ())


def test_every_servers_setting_but_auto_names_a_kind() -> None:
    assert list(kinds.KINDS) == ["embedded", "compose", "external"]
    assert set(get_args(ServerKind)) == {"auto", *kinds.KINDS}
    assert all(kind.name == name for name, kind in kinds.KINDS.items())


def test_what_each_kind_tells_the_runner() -> None:
    table = {
        name: (
            kind.needs_gpu_probe,
            kind.needs_docker,
            kind.package_build,
            kind.pins_a_card,
            kind.waited_for,
            kind.restarts,
        )
        for name, kind in kinds.KINDS.items()
    }
    assert table == {
        "embedded": (True, False, True, True, False, True),  # the package's binary, on this host's card; restarted
        "compose": (True, True, False, True, True, True),  # under Docker, on this host's card; waited for, restarted
        "external": (False, False, False, False, True, False),  # someone else's: nothing probed or placed; waited for
    }
    assert kinds.needs_gpu_probe("auto") and kinds.may_need_docker("auto")  # auto may choose compose on a GPU


def test_an_unknown_kind_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="'cloud' is not a server kind; the kinds are embedded, compose, external"):
        kinds.kind("cloud")
    config = BenchConfig(sandbox="local", servers="external", flint_url="http://127.0.0.1:1")
    host = choices.Host(None, NO_GPU)
    with pytest.raises(ConfigError, match="the kinds are embedded, compose, external"):  # before anything is made
        choices.Factory(config, Choice("local", "asked"), Choice("cloud", "typo"), host, checkout=ROOT)


def test_the_factory_makes_the_chosen_kind(tmp_path: Path) -> None:
    config = BenchConfig(sandbox="local", servers="external", flint_url="http://127.0.0.1:1")
    host = choices.Host(None, NO_GPU)
    factory = choices.Factory(config, Choice("local", "asked"), Choice("external", "asked"), host, checkout=ROOT)
    servers = factory.make_servers(tmp_path, [])
    assert isinstance(servers, ExternalServers) and servers.flint_url == "http://127.0.0.1:1"
    assert factory.engine is None  # no sandbox engine and no Docker kind: nothing of an engine to clean up
