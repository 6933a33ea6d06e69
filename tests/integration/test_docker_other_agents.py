"""Another agent than the article's in the real docker sandbox: its requests reach the model only through the
recording proxy's container (logged, /metrics refused), it cannot reach Flint directly, its files come back for
grading, the proxy's log is in the run's out folder afterwards, and an agent past the run's step limit is ended
by the bench when the proxy says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.agents.base import AgentCommand, AgentSettings
from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.names import BenchNames
from bench.containers.network import bridge_gateway
from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import make_work_copy
from bench.ownership import Ownership
from bench.run.instance import remove_instance
from bench.sandbox.docker import DockerSandboxes
from bench.sandbox.record_proxy import PROXY_LOG
from bench.servers.base import Endpoints
from bench.testing.fake_llama import FakeLlama
from bench.testing.tiny_agent import endless, tiny

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("child_processes")]

TODO = load_fixture("todo_repo", ROOT)
SOLVED = {name: (TODO.solution_dir / name).read_text() for name in ("todo.py",)}
SETTINGS = AgentSettings("", 4096, 5, 2, 0.5, "{}", 0, 1.0, 60.0, 30.0, 3)


@pytest.fixture
def sandboxes(tmp_path: Path) -> Iterator[tuple[DockerSandboxes, FakeLlama]]:
    client: Any = docker_client()
    ownership = Ownership.new()
    ownership.docker = True
    names = BenchNames(ownership.instance)
    kind = DockerSandboxes(BenchConfig(sandbox_repo_size="8m"), names, docker=client, checkout=ROOT)
    flint = FakeLlama(host=bridge_gateway(client, names)).start()
    try:
        props = flint_props(flint)
        kind.connect(Endpoints(ctx=4096, flint_url=flint.url, flint=props, flint_model_path=None))
        yield kind, flint
    finally:
        kind.close()
        flint.stop()
        remove_instance(ownership, client)


def flint_props(flint: FakeLlama) -> Any:
    from bench.agents.article import Props

    return Props(n_ctx=4096, model=flint.model_path, build=flint.build_info, supports_tool_calls=True)


def test_another_agent_reaches_the_model_only_through_the_recording_proxy(
    sandboxes: tuple[DockerSandboxes, FakeLlama], tmp_path: Path
) -> None:
    kind, flint = sandboxes
    host, port = flint.server.server_address[:2]
    agent = AgentCommand(tiny(SOLVED, probe=f"{host}:{port}"), SETTINGS)
    workdir, out_dir = tmp_path / "repo", tmp_path / "out"
    out_dir.mkdir()
    make_work_copy(TODO, workdir)
    run = kind.sandbox("t").run_agent(workdir, out_dir, "TASK.md", TODO.protected_files, agent)
    assert run.infra_error is None and run.exit_code == 0, run.output[-2000:]
    assert "/metrics refused: 403" in run.output and "direct: " in run.output, run.output
    assert "direct: connected" not in run.output  # Flint itself, past the proxy: not reachable
    assert (workdir / "todo.py").read_text() == SOLVED["todo.py"]
    exchanges = [json.loads(line) for line in (out_dir / PROXY_LOG).read_text().splitlines()]
    assert [(e["route"], e["status"]) for e in exchanges] == [("POST /v1/chat/completions", 200)] * 2
    assert len(flint.responses) == 2


def test_an_agent_past_the_step_limit_is_ended_when_the_proxys_container_says_so(
    sandboxes: tuple[DockerSandboxes, FakeLlama], tmp_path: Path
) -> None:
    kind, flint = sandboxes
    workdir, out_dir = tmp_path / "repo", tmp_path / "out"
    out_dir.mkdir()
    make_work_copy(TODO, workdir)
    run = kind.sandbox("t").run_agent(workdir, out_dir, "TASK.md", [], AgentCommand(endless(), SETTINGS))
    assert run.infra_error is None and (run.exit_code, run.timed_out) == (137, False), run.output[-2000:]
    *exchanges, stop = [json.loads(line) for line in (out_dir / PROXY_LOG).read_text().splitlines()]
    assert stop["stopped"] == "step_limit" and stop["max_steps"] == SETTINGS.max_steps
    assert [bool(e["request"].get("tools")) for e in exchanges] == [True, False] * SETTINGS.max_steps
    assert all(e["status"] == 200 for e in exchanges) and len(flint.responses) == 2 * SETTINGS.max_steps
