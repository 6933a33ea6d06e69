"""Which Compose the bench runs (bench/servers/compose_cli.py), with stand-in binaries that print a version: the
current line is preferred (plugin, then standalone), v1 is found even when a current-line binary comes first on PATH,
and $AGENTBENCH_COMPOSE picks one explicitly. The real lines run the compose integration tests
(compose_line fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.errors import PrerequisiteError
from bench.servers import compose_cli
from bench.servers.compose_cli import ComposeCli, available, find_compose


def fake(folder: Path, name: str, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def compose_binary(folder: Path, version: str) -> Path:
    return fake(folder, "docker-compose", f'[ "$1 $2" = "version --short" ] && echo {version} && exit 0; exit 2')


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH and an empty Python bin/ (the real venv's docker-compose must not leak in)."""
    (tmp_path / "python-bin").mkdir()
    monkeypatch.setattr(compose_cli.sysconfig, "get_path", lambda name: str(tmp_path / "python-bin"))
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv(compose_cli.OVERRIDE, raising=False)
    return tmp_path


def use_path(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    monkeypatch.setenv("PATH", ":".join(str(f) for f in folders))


@pytest.mark.usefixtures("child_processes")
def test_the_current_line_is_preferred_even_when_v1_comes_first_on_path(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1 = compose_binary(machine / "usr-bin", "1.29.2")
    current = compose_binary(machine / "python-bin", "5.6.1")  # a venv's bin/, not on PATH
    use_path(monkeypatch, machine / "usr-bin")
    assert available() == [ComposeCli((str(current),), "5.6.1"), ComposeCli((str(v1),), "1.29.2")]
    assert find_compose().label == f"`{current}` 5.6.1 (standalone)"


@pytest.mark.usefixtures("child_processes")
def test_v1_is_found_behind_a_current_line_binary_earlier_on_path(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compose_binary(machine / "venv-bin", "v2.40.0")
    v1 = compose_binary(machine / "usr-bin", "1.29.2")
    use_path(monkeypatch, machine / "venv-bin", machine / "usr-bin")
    assert [c.version for c in available()] == ["2.40.0", "1.29.2"]
    assert available()[1].argv == (str(v1),) and available()[1].v1


@pytest.mark.usefixtures("child_processes")
def test_the_docker_compose_plugin_comes_first(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake(machine / "bin", "docker", '[ "$1 $2 $3" = "compose version --short" ] && echo v5.6.1 && exit 0; exit 1')
    compose_binary(machine / "bin", "1.29.2")
    use_path(monkeypatch, machine / "bin")
    chosen = find_compose()
    assert chosen.argv == ("docker", "compose") and chosen.label == "`docker compose` 5.6.1 (plugin)"


@pytest.mark.usefixtures("child_processes")
def test_a_docker_without_the_plugin_is_passed_over(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake(machine / "bin", "docker", 'echo "docker: unknown command: docker $1" >&2; exit 1')
    compose_binary(machine / "bin", "1.29.2")
    use_path(monkeypatch, machine / "bin")
    assert find_compose().label == f"`{machine / 'bin' / 'docker-compose'}` 1.29.2 (standalone, v1)"


@pytest.mark.usefixtures("child_processes")
def test_the_override_picks_one_explicitly_and_a_wrong_one_is_named(
    machine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v1 = compose_binary(machine / "usr-bin", "1.29.2")
    compose_binary(machine / "python-bin", "5.6.1")
    monkeypatch.setenv(compose_cli.OVERRIDE, str(v1))
    assert find_compose().argv == (str(v1),)
    monkeypatch.setenv(compose_cli.OVERRIDE, str(machine / "nowhere"))
    with pytest.raises(
        PrerequisiteError, match="AGENTBENCH_COMPOSE=.*does not answer `version`: fix the command or unset"
    ):
        find_compose()


def test_no_compose_at_all_says_what_to_install(machine: Path) -> None:
    with pytest.raises(PrerequisiteError, match="no Compose found: install the `docker compose` plugin"):
        find_compose()
