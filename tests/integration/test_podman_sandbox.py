"""The podman sandbox kind against podman's real API service ($CONTAINER_HOST; .ci/run starts one): a real agent
run in a podman container against the scripted server, behind the forwarder; the network reaching Flint and Jeff
and nothing of this host; grading with no network; nothing left behind."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.server import Props
from bench import ROOT
from bench.config import BenchConfig
from bench.containers.names import OWNER_LABEL, BenchNames
from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import make_work_copy
from bench.ownership import Ownership
from bench.run.instance import remove_instance
from bench.sandbox.podman import PodmanSandboxes
from bench.sandbox.trace_file import read_trace_safely
from bench.score.graders import grader_for, run_pytest
from bench.servers.base import Endpoints
from bench.testing import fake_llama, host_targets
from bench.testing.agents import article_run

# One group: the module's podman sandboxes and forwarder are made once, on one pytest-xdist worker.
pytestmark = [pytest.mark.podman, pytest.mark.xdist_group("podman-sandbox")]

PROBE = (
    host_targets.PROBE_FUNCTIONS
    + """
import json, urllib.request
def reach(url):
    try:
        return urllib.request.urlopen(url, timeout=5).status
    except Exception as e:
        return type(e).__name__
print(json.dumps({"flint": reach("http://flint:8080/health"), "jeff": reach("http://jeff:8081/health"),
                  "default_route": default_route(), "targets": connect_all(TARGETS)}))
"""
)


def endpoints(flint_url: str, jeff_url: str) -> Endpoints:
    props = Props(n_ctx=4096, model="f.gguf", build="b1", supports_tool_calls=True)
    return Endpoints(ctx=4096, flint_url=flint_url, flint=props, flint_model_path=None, jeff_url=jeff_url, jeff=props)


@pytest.fixture(scope="module")
def kind() -> Iterator[PodmanSandboxes]:
    """One bench's podman sandboxes (repository limited to 8 MB), removed with everything they made at the end."""
    record = Ownership.new()
    record.docker = True
    sandboxes = PodmanSandboxes(BenchConfig(sandbox_repo_size="8m"), BenchNames(record.instance), checkout=ROOT)
    yield sandboxes
    sandboxes.close()
    remove_instance(record, sandboxes.engine.client)


@pytest.fixture(scope="module")
def served(kind: PodmanSandboxes) -> Iterator[tuple[fake_llama.FakeLlama, fake_llama.FakeLlama]]:
    """A scripted Flint and Jeff listening where the kind says, connected through its forwarder."""
    host = kind.server_host()
    flint = fake_llama.FakeLlama(host=host).start()
    jeff = fake_llama.FakeLlama(host=host, default=fake_llama.prose("yes: harmless")).start()
    kind.connect(endpoints(flint.url, jeff.url))
    yield flint, jeff
    flint.stop()
    jeff.stop()


def test_an_agent_run_in_a_podman_container(kind: PodmanSandboxes, served: Any, tmp_path: Path) -> None:
    flint, _ = served
    workdir, out_dir = tmp_path / "repo", tmp_path / "out"
    out_dir.mkdir()
    make_work_copy(load_fixture("todo_repo", ROOT), workdir)
    original = (workdir / "test_todo.py").read_text()
    attack = (
        "id -u; echo hacked > test_todo.py; dd if=/dev/zero of=big.bin bs=1M count=16 2>&1 | tail -1; "
        "ls /hidden_tests 2>&1; echo mine > notes.txt"
    )
    first = len(flint.requests)
    flint.add(fake_llama.tool_call("run", {"command": attack}), fake_llama.prose("All done."))
    sandbox = kind.sandbox("test-run")

    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "3")
    )

    assert run.infra_error is None and run.changes_lost is None and not run.timed_out, run.output[-2000:]
    result = next(m["content"] for m in flint.requests[first + 1]["messages"] if m["role"] == "tool")
    assert result.splitlines()[0] == "10001"  # the command user, not root
    assert "Read-only file system" in result and "No space left on device" in result
    assert "No such file or directory" in result  # no hidden tests in sight
    assert (workdir / "test_todo.py").read_text() == original
    assert (workdir / "big.bin").stat().st_size < 8 * 1024 * 1024  # the repository's size limit held
    text, problem = read_trace_safely(out_dir / "events.jsonl", owner_uid=sandbox.trace_owner)
    assert problem is None and text is not None
    events = [json.loads(line) for line in text.splitlines()]
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "done"
    assert any(e["event"] == "jeff" and e["opinion"] for e in events)  # Jeff, reached through the forwarder
    assert kind.healthy()  # what the runner asks between runs: the forwarder answers for both servers


def test_a_podman_sandbox_reaches_flint_and_jeff_and_nothing_else(kind: PodmanSandboxes, served: Any) -> None:
    """Listeners on each of this host's own addresses (its primary interface, every bridge's gateway, podman's
    among them) and Flint's port itself: the sandbox reaches none, only the forwarder's flint and jeff."""
    flint, _ = served
    assert kind.reach is not None
    listeners = host_targets.listeners_on_every_host_address()
    try:
        targets = {f"host listener {host}:{port}": (host, port) for host, port in (lst.address for lst in listeners)}
        host, port = flint.server.server_address[:2]
        targets["flint directly, not through the forwarder"] = (host, port)
        output = kind.engine.client.containers.run(
            kind.engine.image,
            ["python3", "-c", PROBE.replace("TARGETS", repr(targets))],
            network=kind.reach.network,
            extra_hosts=dict(kind.reach.hosts),
            remove=True,
            labels=kind.engine.names.labels("probe"),
        )
    finally:
        for listener in listeners:
            listener.close()
    found = json.loads(output.decode().strip().splitlines()[-1])
    assert found["flint"] == 200 and found["jeff"] == 200
    assert [name for name, outcome in found["targets"].items() if outcome == "connected"] == []
    assert all(listener.accepted == [] for listener in listeners)
    route = found["default_route"]  # where one is set, it leads to this host's own address: a listener above
    assert route is None or any(host == route for host, _ in targets.values())


def test_grading_in_podman_has_no_network(kind: PodmanSandboxes, tmp_path: Path) -> None:
    with host_targets.Listener(host_targets.primary_address()) as own:
        (tmp_path / "test_probe.py").write_text(
            host_targets.PROBE_FUNCTIONS + "import os\n\n"
            f"def test_reach_this_host():\n    socket.create_connection({own.address!r}, timeout=3)\n\n"
            "def test_no_route():\n    assert not default_route()\n    assert os.listdir('/sys/class/net') == ['lo']\n"
        )
        run = run_pytest(grader_for(kind.engine), tmp_path, ["-q", "-p", "no:cacheprovider"], timeout_s=120)
    assert run.exit_code == 1 and not run.timed_out
    assert "1 failed, 1 passed" in run.output, run.output
    assert own.accepted == []


def test_closing_a_podman_bench_leaves_nothing_behind(tmp_path: Path) -> None:
    record = Ownership.new()
    record.docker = True
    names = BenchNames(record.instance)
    sandboxes = PodmanSandboxes(BenchConfig(), names, checkout=ROOT)
    client = sandboxes.engine.client
    with fake_llama.FakeLlama(host=sandboxes.server_host()) as flint:
        sandboxes.connect(endpoints(flint.url, flint.url))
        assert client.containers.list(filters={"label": f"{OWNER_LABEL}={names.instance}"}) != []
        sandboxes.close()
    removed = remove_instance(record, client)
    assert f"network {names.sandbox_network}" in removed and "its firewall rule" in removed
    assert client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={names.instance}"}) == []
    assert client.networks.list(filters={"label": f"{OWNER_LABEL}={names.instance}"}) == []
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    assert f"ab{names.instance}" not in rules
