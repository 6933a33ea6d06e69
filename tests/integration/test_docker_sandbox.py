"""The docker sandbox against the real Docker engine: network restriction, read-only visible tests, no hidden tests,
the model's commands as a user who cannot touch the agent or its trace, only chat through the forwarder, benches
that cannot see each other, a dead bench's leftovers removed and a live one's kept, the repository size-limited and
emptied between runs, grading without a network."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from done_attacks import BROKEN_TODO, NEW_TEST, PACKAGE_ATTACKS, write

from agent.console import legible
from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_client, remove_container, role_labels, run_container
from bench.containers.forwarder import Forwarder
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.containers.network import bridge_gateway, sandbox_network
from bench.containers.repo_volume import RepoVolume
from bench.fixtures.fixture import Fixture, load_fixture
from bench.fixtures.workcopy import make_work_copy
from bench.ownership import Ownership, new_instance_id
from bench.run.instance import reap_dead, remove_instance
from bench.sandbox.base import Engine, Reach
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.trace_file import read_trace_safely
from bench.score.graders import DockerGrader, run_pytest
from bench.setting_types import size_bytes
from bench.testing import fake_llama, host_targets
from bench.testing.agents import article_run

# One group: the module's bench instance (its networks and forwarder) is made once, on one pytest-xdist worker.
pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("docker-sandbox")]

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
CONTROL = host_targets.PROBE_FUNCTIONS + "import json\nprint(json.dumps(connect_all(TARGETS)))\n"


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


@pytest.fixture(scope="module")
def image(client: Any) -> str:
    return ensure_sandbox_image(client, ROOT)


@pytest.fixture(scope="module")
def names(client: Any) -> Any:
    """This module's bench instance: networks and forwarder of its own, removed (with its firewall rule) at its end."""
    ownership = Ownership.new()
    ownership.docker = True
    yield BenchNames(ownership.instance)
    remove_instance(ownership, client)


@pytest.fixture
def forwarded(client: Any, image: str, names: BenchNames) -> Any:
    """A fake Flint and Jeff on the host, reachable from sandboxes only through the forwarder."""
    gateway = bridge_gateway(client, names)
    flint = fake_llama.FakeLlama(host=gateway).start()
    jeff = fake_llama.FakeLlama(host=gateway, default=fake_llama.prose("yes: harmless")).start()
    forwarder = Forwarder(client, image, names)
    flint_url, jeff_url = forwarder.start(
        (gateway, flint.server.server_address[1]), (gateway, jeff.server.server_address[1])
    )
    yield gateway, flint, jeff, flint_url, jeff_url
    forwarder.stop()
    flint.stop()
    jeff.stop()


@pytest.fixture
def bridge_listener(client: Any, image: str, names: BenchNames) -> Any:
    """A container listening on the forwarder's bridge network: a target the sandbox could reach only if this host
    forwarded its packets onto another network, the path any traffic to the outside would take."""
    port = 9999
    container = client.containers.run(
        image,
        ["python3", "-c", host_targets.LISTENER.replace("PORT", str(port))],
        detach=True,
        network=names.bridge_network,
        labels=names.labels("probe"),
        user="10001",
    )
    try:
        deadline = time.monotonic() + 30
        while b"listening" not in container.logs() and time.monotonic() < deadline:
            time.sleep(0.2)
        container.reload()
        yield container, (container.attrs["NetworkSettings"]["Networks"][names.bridge_network]["IPAddress"], port)
    finally:
        remove_container(client, container.id)


@pytest.fixture
def sandboxes(client: Any, image: str, names: BenchNames) -> Any:
    """Makes docker sandboxes, each with a repository volume of its own (as each bench worker has one), removed at
    the test's end."""
    volumes: list[RepoVolume] = []

    def make(flint_url: str, jeff_url: str | None = None, config: BenchConfig | None = None) -> DockerSandbox:
        config = config or BenchConfig()
        volumes.append(RepoVolume(client, image, names, size_bytes(config.sandbox_repo_size)))
        engine = Engine("docker", client, image, names)
        return DockerSandbox(engine, reach(names, flint_url, jeff_url), config, "test-run", volumes[-1])

    yield make
    for volume in volumes:
        volume.remove()
    assert client.volumes.list(filters={"label": f"agentbench.instance={names.instance}"}) == []


def run_probe(client: Any, image: str, network: str, script: str) -> dict[str, Any]:
    output = client.containers.run(
        image, ["python3", "-c", script], network=network, remove=True, labels=role_labels("sandbox")
    )
    result: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    return result


def todo_work_copy(tmp_path: Path, fixture: Fixture | None = None) -> tuple[Path, Path]:
    """A work copy of todo_repo (or `fixture`) in tmp_path/repo, and an empty tmp_path/out for the run's trace."""
    workdir, out_dir = tmp_path / "repo", tmp_path / "out"
    out_dir.mkdir()
    make_work_copy(fixture or load_fixture("todo_repo", ROOT), workdir)
    return workdir, out_dir


def test_sandbox_reaches_flint_and_jeff_and_nothing_else(
    client: Any, image: str, names: BenchNames, forwarded: Any, bridge_listener: Any
) -> None:
    """Nothing else, with targets on this machine only: a listener on each of this host's own addresses (its primary
    interface, the docker bridge gateways), Flint's port on the bridge gateway (only the forwarder may pass it on),
    and a container on the forwarder's bridge network. A control probe on that network reaches the last two, so
    the listeners work and the sandbox's failures are its isolation."""
    gateway, flint, _, _, _ = forwarded
    container, container_target = bridge_listener
    listeners = host_targets.listeners_on_every_host_address()
    try:
        targets = {f"host listener {host}:{port}": (host, port) for host, port in (lst.address for lst in listeners)}
        targets["flint directly, not through the forwarder"] = (gateway, flint.server.server_address[1])
        targets["a container on the bridge network"] = container_target
        assert {host_targets.primary_address(), gateway} <= {host for host, _ in targets.values()}
        sandbox = run_probe(client, image, sandbox_network(client, names), PROBE.replace("TARGETS", repr(targets)))
        control_targets = {
            "container": container_target,
            "gateway": next(t for t in targets.values() if t[0] == gateway),
        }
        control = run_probe(client, image, names.bridge_network, CONTROL.replace("TARGETS", repr(control_targets)))
    finally:
        for listener in listeners:
            listener.close()
    assert sandbox["flint"] == 200 and sandbox["jeff"] == 200
    assert [name for name, outcome in sandbox["targets"].items() if outcome == "connected"] == []
    heard = {lst.address[0]: len(lst.accepted) for lst in listeners}
    assert heard == {host: int(host == gateway) for host in heard}  # the control probe's one connection
    assert control == {"container": "connected", "gateway": "connected"}
    assert container.logs().decode().count("accepted") == 1  # the control probe's, not the sandbox's
    # A default route, where the engine sets one (Docker 20.10 does on internal networks), leads only to this
    # host's own address on the sandbox network: one of the listeners above, which heard nothing from it.
    route = sandbox["default_route"]
    assert route is None or any(host == route for host, _ in targets.values())


FILTER_PROBE = """
import json, urllib.error, urllib.request
def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
results = {}
for name, base in (("flint", FLINT), ("jeff", JEFF)):
    results[name] = {
        "chat": call("POST", base + "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
        "props": call("GET", base + "/props"),
        "health": call("GET", base + "/health"),
        "slots": call("POST", base + "/slots/0?action=save", {"filename": "planted.bin"}),
        "metrics": call("GET", base + "/metrics"),
    }
print(json.dumps(results))
"""


def test_only_chat_props_and_health_reach_the_servers_from_a_sandbox(
    client: Any, image: str, names: BenchNames, forwarded: Any
) -> None:
    _, flint, jeff, flint_url, jeff_url = forwarded
    flint.add(fake_llama.prose("hello"))
    script = FILTER_PROBE.replace("FLINT", repr(flint_url)).replace("JEFF", repr(jeff_url))

    output = client.containers.run(
        image,
        ["python3", "-c", script],
        network=sandbox_network(client, names),
        remove=True,
        labels=role_labels("sandbox"),
    )

    expected = {"chat": 200, "props": 200, "health": 200, "slots": 403, "metrics": 403}
    assert json.loads(output.decode().strip().splitlines()[-1]) == {"flint": expected, "jeff": expected}
    for server in (flint, jeff):
        assert sorted({path.split("?")[0] for _, path in server.hits}) == ["/health", "/props", "/v1/chat/completions"]


def test_agent_in_container_cannot_touch_visible_tests_or_see_hidden_ones(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    _, flint, jeff, flint_url, jeff_url = forwarded
    fixture = load_fixture("todo_repo", ROOT)
    workdir, out_dir = todo_work_copy(tmp_path, fixture)
    original = (workdir / "test_todo.py").read_text()
    attack = (
        "echo hacked > test_todo.py; rm -f test_todo.py; id -u; "
        "ls /work /hidden_tests 2>&1; find / -name 'test_*.py' -path '*hidden*' 2>/dev/null | wc -l"
    )
    flint.add(fake_llama.tool_call("run", {"command": attack}), fake_llama.prose("All done."))
    sandbox = sandboxes(flint_url, jeff_url)
    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "3")
    )

    assert run.infra_error is None and not run.timed_out
    assert (workdir / "test_todo.py").read_text() == original
    tool_result = next(m["content"] for m in flint.requests[1]["messages"] if m["role"] == "tool")
    assert "Read-only file system" in tool_result or "Device or resource busy" in tool_result
    assert "10001" in tool_result  # not root
    assert "No such file or directory" in tool_result and tool_result.rstrip().splitlines()[-2].strip() == "0"
    events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "done"
    assert any(e["event"] == "jeff" and e["opinion"] for e in events)  # Jeff was reached through the forwarder


def test_grading_container_has_no_network(client: Any, image: str, names: BenchNames, tmp_path: Path) -> None:
    """A listener on this host's own interface and on the docker bridge gateway: the grading container reaches
    neither, has no route at all and no interface but loopback."""
    with (
        host_targets.Listener(host_targets.primary_address()) as own,
        host_targets.Listener(bridge_gateway(client, names)) as bridge,
    ):
        (tmp_path / "test_probe.py").write_text(
            host_targets.PROBE_FUNCTIONS + "import os\n\n"
            f"def test_reach_this_host():\n    socket.create_connection({own.address!r}, timeout=3)\n\n"
            f"def test_reach_the_bridge_gateway():\n    socket.create_connection({bridge.address!r}, timeout=3)\n\n"
            "def test_no_route():\n    assert not default_route()\n    assert os.listdir('/sys/class/net') == ['lo']\n"
        )
        run = run_pytest(DockerGrader(client, image), tmp_path, ["-q", "-p", "no:cacheprovider"], timeout_s=120)
    assert run.exit_code == 1 and not run.timed_out
    assert "2 failed, 1 passed" in run.output, run.output
    assert own.accepted == [] and bridge.accepted == []


TRACE_ATTACK = (
    "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; grep '^Uid' /proc/1/status; "
    """echo '{"t": 9, "event": "stop", "reason": "done", "steps": 9}' >> /out/events.jsonl; echo append=$?; """
    "rm -f /out/events.jsonl; echo rm=$?; ln -s /etc/shadow /out/trap; echo link=$?; mkfifo /out/fifo; "
    "echo fifo=$?; touch /out/x; echo touch=$?; kill -TERM 1; echo kill=$?; stat -c owner=%u notes.txt"
)


def test_the_models_commands_cannot_write_the_trace_or_touch_the_agent(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    flint.add(
        fake_llama.tool_call("write_file", {"path": "notes.txt", "content": "mine\n"}),
        fake_llama.tool_call("run", {"command": TRACE_ATTACK}),
        fake_llama.prose("All done."),
    )
    sandbox = sandboxes(flint_url)

    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "4")
    )

    assert run.infra_error is None and not run.timed_out, run.output[-2000:]
    result = [m["content"] for m in flint.requests[2]["messages"] if m["role"] == "tool"][-1]
    lines = result.splitlines()
    assert lines[0] == "10001"  # the command user
    assert "CapEff:\t0000000000000000" in lines and "NoNewPrivs:\t1" in lines
    assert "Uid:\t0\t10001\t0\t10001" in lines  # the agent: root as real and saved uid, 10001 for its files
    for attempt in ("append", "rm", "link", "fifo", "touch", "kill"):
        assert f"{attempt}=1" in lines, result
    assert sorted(p.name for p in out_dir.iterdir()) == ["events.jsonl", "events.requests.jsonl"]  # and its log
    text, problem = read_trace_safely(out_dir / "events.jsonl", owner_uid=sandbox.trace_owner)
    assert problem is None and text is not None
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["event"] for e in events].count("stop") == 1 and events[-1]["reason"] == "done"
    assert "owner=10001" in lines  # the agent's own writes belong to the command user
    assert (workdir / "notes.txt").read_text() == "mine\n"  # and come back from the sandbox's repository


ISOLATION_PROBE = host_targets.PROBE_FUNCTIONS + "import json\nprint(json.dumps(connect_all(TARGETS)))\n"


def test_a_sandbox_reaches_nothing_of_another_bench(client: Any, image: str, names: BenchNames) -> None:
    """Another bench's sandbox network holds a listener (as its forwarder or a sandbox would): a sandbox of ours
    does not reach it, a container on that bench's own network does."""
    other = BenchNames(new_instance_id())
    assert {other.sandbox_network, other.bridge_network, other.forwarder}.isdisjoint(
        {names.sandbox_network, names.bridge_network, names.forwarder}
    )
    try:
        listener = client.containers.run(
            image,
            ["python3", "-c", host_targets.LISTENER.replace("PORT", "9999")],
            detach=True,
            network=sandbox_network(client, other),
            labels=other.labels("probe"),
            user="10001",
        )
        deadline = time.monotonic() + 30
        while b"listening" not in listener.logs() and time.monotonic() < deadline:
            time.sleep(0.2)
        listener.reload()
        address = listener.attrs["NetworkSettings"]["Networks"][other.sandbox_network]["IPAddress"]
        script = ISOLATION_PROBE.replace("TARGETS", repr({"other": (address, 9999)}))
        ours = run_probe(client, image, sandbox_network(client, names), script)
        theirs = run_probe(client, image, other.sandbox_network, script)
    finally:
        remove_instance(record_for(other), client)
    assert ours == {"other": "timeout"} or ours["other"] != "connected", ours
    assert theirs == {"other": "connected"}


def record_for(names: BenchNames, owner: tuple[int, int | None] | None = None) -> Ownership:
    record = Ownership(names.instance)
    record.docker = True
    if owner is not None:
        record.owner_pid, record.owner_start_time = owner
    return record


def test_the_reaper_removes_a_dead_benchs_containers_and_keeps_a_live_ones(
    client: Any, image: str, tmp_path: Path
) -> None:
    import sys

    from bench.processes import start_time

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner = (ended.pid, start_time(ended.pid))
    ended.wait()
    dead, live = BenchNames(new_instance_id()), BenchNames(new_instance_id())
    made = {}
    try:
        for bench in (dead, live):
            network = sandbox_network(client, bench)
            made[bench.instance] = client.containers.run(
                image, ["sleep", "300"], detach=True, network=network, labels=bench.labels("sandbox")
            )
        dead_record = record_for(dead, dead_owner)
        dead_record.state_file = tmp_path / f"{dead.instance}.json"
        dead_record.save()
        live_record = record_for(live)  # owned by this process, alive
        live_record.state_file = tmp_path / f"{live.instance}.json"
        live_record.save()

        (line,) = reap_dead(tmp_path, client)

        assert f"bench {dead.instance}" in line and "container" in line and dead.sandbox_network in line
        ids = subprocess.run(["docker", "ps", "-aq", "--no-trunc"], capture_output=True, text=True).stdout.split()
        assert made[dead.instance].id not in ids and made[live.instance].id in ids
        assert client.networks.list(names=[dead.sandbox_network]) == []
        assert client.networks.list(names=[live.sandbox_network]) != []
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"{live.instance}.json"]
    finally:
        for bench in (dead, live):
            remove_instance(record_for(bench), client)


def test_the_repository_is_size_limited_and_what_fits_comes_back(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    fill = "dd if=/dev/zero of=big.bin bs=1M count=64 2>&1 | tail -1; echo dd=$?; echo kept > kept.txt; cat kept.txt"
    flint.add(fake_llama.tool_call("run", {"command": fill}), fake_llama.prose("All done."))
    config = BenchConfig(sandbox_repo_size="8m")
    sandbox = sandboxes(flint_url, config=config)

    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "3")
    )

    assert run.infra_error is None and run.changes_lost is None, run.output[-2000:]
    result = [m["content"] for m in flint.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "No space left on device" in result, result
    assert (workdir / "big.bin").stat().st_size < 8 * 1024 * 1024  # refused past the limit
    assert (workdir / "todo.py").read_text() == (load_fixture("todo_repo", ROOT).path / "todo.py").read_text()
    # The model's commands used up a limit of the sandbox: the agent's failure, labelled resource_exhausted.
    assert any("the repository filled up" in limit for limit in run.resources_exhausted), run.resources_exhausted
    assert not run.killed_for_memory


# Everything a run can leave on the repository volume for the next: below /repo, a locked folder, a hidden file, a
# link out, a fifo, a unix socket, a file with an extended attribute; on /repo itself, an extended attribute, an
# access and a default ACL (user, group and other entries, rwx), setgid and sticky bits, times from 2001, and a try at
# another group (refused: the user has none other).
LEFTOVERS = (
    "mkdir -p locked/deep && echo x > locked/deep/f && chmod 000 locked; echo left > .hidden; ln -s /etc/passwd link;"
    ' mkfifo pipe; echo marked > marked; python3 -c "import os, socket, struct; socket.socket(socket.AF_UNIX).bind('
    "'sock'); os.setxattr('marked', 'user.run', b'1'); os.setxattr('.', 'user.run', b'1'); acl = struct.pack('<I', 2)"
    " + b''.join(struct.pack('<HHI', tag, 7, 0xFFFFFFFF) for tag in (1, 4, 32)); os.setxattr('.', "
    "'system.posix_acl_access', acl); os.setxattr('.', 'system.posix_acl_default', acl)\"; echo made=$?;"
    " chmod 3777 . && touch -d 2001-01-01 . && ls -ld . | cut -c1-11; chgrp 0 . 2>/dev/null; echo chgrp=$?"
)
LISTING = (
    "find . -mindepth 1 -printf '%P\\n' | sort; stat -c 'mode=%a owner=%u:%g' .;"
    " python3 -c \"import os, time; s = os.stat('.'); print('attributes', os.listxattr('.'),"
    " 'older than a day:', time.time() - min(s.st_atime, s.st_mtime) > 86400)\""
)
AS_NEW = ["mode=755 owner=10001:10001", "attributes [] older than a day: False"]


def test_one_repository_volume_serves_run_after_run_and_no_run_sees_what_an_earlier_one_left(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    """Runs share their kind's volume: of everything one run left (LEFTOVERS) the next sees nothing, on the same
    volume made as new; a leftover the volume's owner cannot remove gets the next run a new volume."""
    _, flint, _, flint_url, _ = forwarded
    sandbox = sandboxes(flint_url)

    def run(command: str, name: str) -> tuple[str, str, list[str]]:
        (tmp_path / name).mkdir()
        workdir, out_dir = todo_work_copy(tmp_path / name)
        expected = sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*"))
        flint.add(fake_llama.tool_call("run", {"command": command}), fake_llama.prose("All done."))
        # Two steps, the script's: past them the scripted Flint says "done" again and again, and each answer's check
        # failed on what LEFTOVERS left (eight more checks of the first run, 40 s).
        agent = article_run("--approve", "yes", "--max-steps", "2")
        done = sandbox.run_agent(workdir, out_dir, "TASK.md", ["test_todo.py"], agent)
        assert done.infra_error is None and done.changes_lost is None, done.output[-2000:]
        tool_result = [m["content"] for m in flint.requests[-1]["messages"] if m["role"] == "tool"][-1]
        return tool_result, sandbox.repo.name, expected

    first, volume, _ = run(LEFTOVERS, "first")
    assert "made=0" in first and "drwxrwsrwt+" in first and "chgrp=1" in first, first  # `ls` marks an ACL with "+"
    listing, volume_again, expected = run(LISTING, "second")
    assert volume_again == volume  # emptied and made as new, not replaced
    assert listing.splitlines()[: len(expected) + 2] == [*expected, *AS_NEW], listing

    # Between runs, something the volume's owner cannot remove: a folder of root's (made by root without capability,
    # in /repo opened to everyone), as a run's end finds it.
    holder = sandbox.repo.holder
    assert holder.exec_run(["chmod", "0777", "/repo"])[0] == 0
    assert holder.exec_run(["sh", "-c", "mkdir /repo/roots && touch /repo/roots/f"], user="0")[0] == 0
    sandbox.repo.empty()
    listing, volume_after, expected = run(LISTING, "fourth")
    assert volume_after != volume  # replaced
    assert listing.splitlines()[: len(expected) + 2] == [*expected, *AS_NEW], listing


def test_a_command_killed_for_memory_is_a_limit_the_run_reached(sandboxes: Any, forwarded: Any, tmp_path: Path) -> None:
    """The model's command takes more memory than the sandbox has: the kernel kills it, the agent goes on, and the
    run says it reached the memory limit (resource_exhausted), not that the bench failed."""
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    hog = "python3 -c 'b = bytearray(400 << 20); b[::4096] = b\"x\" * len(b[::4096])'; echo status=$?"
    flint.add(fake_llama.tool_call("run", {"command": hog}), fake_llama.prose("All done."))
    config = BenchConfig(sandbox_memory="256m", sandbox_repo_size="64m")
    sandbox = sandboxes(flint_url, config=config)

    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "3")
    )

    result = [m["content"] for m in flint.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "status=137" in result, result
    assert run.exit_code == 0 and not run.killed_for_memory, run.output[-2000:]
    assert any("killed for memory (sandbox_memory=256m)" in limit for limit in run.resources_exhausted)


def test_a_sparse_file_larger_than_the_repository_is_not_brought_back(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    """A tmpfs holds a 1 GB sparse file in no space at all, but its tar stream spells the gigabyte out: reading it
    back stops at the repository's size, and the run says its changes were lost rather than grading a part."""
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    flint.add(fake_llama.tool_call("run", {"command": "truncate -s 1G sparse.bin"}), fake_llama.prose("All done."))
    config = BenchConfig(sandbox_repo_size="8m")
    sandbox = sandboxes(flint_url, config=config)

    run = sandbox.run_agent(
        workdir, out_dir, "TASK.md", ["test_todo.py"], article_run("--approve", "yes", "--max-steps", "3")
    )

    assert run.infra_error is None
    assert run.changes_lost is not None and "hold more than 8388608 bytes" in run.changes_lost
    assert sum(p.stat().st_size for p in workdir.rglob("*") if p.is_file()) <= 8 * 1024 * 1024


def test_a_containers_output_is_capped_and_says_it_was_cut(client: Any, image: str, names: BenchNames) -> None:
    flood = "import sys\nfor _ in range(2000): sys.stdout.write('x' * 10000 + '\\n')\nprint('the end')"
    code, timed_out, output = run_container(
        client,
        120,
        1024 * 1024,
        image=image,
        command=["python3", "-c", flood],
        network_mode="none",
        labels=names.labels("probe"),
    )
    assert (code, timed_out) == (0, False)
    assert len(output) < 1024 * 1024 + 200 and "bytes of output cut here" in output
    assert output.rstrip().endswith("the end")


def reach(names: BenchNames, flint_url: str, jeff_url: str | None) -> Reach:
    return Reach(names.sandbox_network, flint_url, jeff_url)


# The done check of part3+ as the command user: a detached writer a planted conftest.py starts during a by-rule
# pytest (it puts the todo.py of that moment into the check's copies), and a doctest text file that makes the tests
# after it pass, on a broken todo.py: not done. Then the model undoes both, and the check passes.
DETACHED_WRITER = """
import glob, os, tempfile, time
GOOD = open("todo.py").read()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            for path in glob.glob(os.path.join(tempfile.gettempdir(), "agent-done-*", "*", "todo.py")):
                try:
                    if open(path).read() != GOOD:
                        open(path, "w").write(GOOD)
                except OSError:
                    pass
            time.sleep(0.002)
        os._exit(0)
    os._exit(0)
os.wait()
"""
PATCHING_DOCTEST = ">>> import _pytest.python\n>>> _pytest.python.Function.runtest = lambda self: None\n"


def test_the_done_check_of_part3_plus_holds_for_the_command_user(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    original = (workdir / "todo.py").read_text()

    flint.add(
        write("conftest.py", DETACHED_WRITER),
        fake_llama.tool_call("run", {"command": "pytest -q"}),
        write("test_notes.txt", PATCHING_DOCTEST),
        write("todo.py", "def main(argv=None):\n    return 1\n"),
        fake_llama.prose("Done."),
        write("todo.py", original),
        write("test_notes.txt", ">>> 1 + 1\n2\n"),
        fake_llama.prose("Done now."),
    )
    run = sandboxes(flint_url).run_agent(
        workdir,
        out_dir,
        "TASK.md",
        ["test_todo.py"],
        article_run("--approve", "no", "--max-steps", "9", preset="part3+"),
    )
    assert run.infra_error is None and not run.timed_out, run.output[-2000:]
    events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
    checks = [e for e in events if e["event"] == "done_check"]
    assert [c["passed"] for c in checks] == [False, True], checks
    assert "test_notes.txt" in checks[0]["planted"] and "failed" in checks[0]["summary"]
    assert events[-1]["reason"] == "done"


# The attacks of tests/agent/test_agent_check_interpreter.py and test_agent_test_package.py, under the sandbox's
# users: the agent as root (its effective uid the command user's), HOME=/tmp, the commands' user site in /tmp.
HOOK_INSTALLER = """
import os, site

folder = site.getusersitepackages()
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "usercustomize.py"), "w") as f:
    f.write("import _pytest.python\\n_pytest.python.Function.runtest = lambda self: None\\n")
open("/repo/hook-installed", "w").close()


def test_setup():
    pass
"""


def test_a_start_up_hook_in_the_command_users_site_does_not_reach_the_check(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    _, flint, _, flint_url, _ = forwarded
    workdir, out_dir = todo_work_copy(tmp_path)
    flint.add(
        fake_llama.tool_call("write_file", {"path": "test_hook.py", "content": HOOK_INSTALLER}),
        fake_llama.tool_call("write_file", {"path": "todo.py", "content": "def main(argv=None):\n    return 1\n"}),
        fake_llama.prose("Done."),
        fake_llama.prose("Done now."),
    )
    run = sandboxes(flint_url).run_agent(
        workdir,
        out_dir,
        "TASK.md",
        ["test_todo.py"],
        article_run("--approve", "no", "--max-steps", "4", preset="part3+"),
    )
    assert run.infra_error is None and not run.timed_out, run.output[-2000:]
    assert (workdir / "hook-installed").exists()  # the first check imported the new test, which installed its hook
    events = [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]
    checks = [e for e in events if e["event"] == "done_check"]
    assert [c["passed"] for c in checks] == [False, False], checks
    assert all("failed" in c["summary"] for c in checks) and events[-1]["reason"] == "step_limit"


# Issue 50's other attacks on the done check and approval, under the same users, as the local tests of tests/agent/ try
# them: the test package's `__init__` patching pytest (test_agent_test_package.py), a `pytest.py` or `pytest/` of the
# repository standing in for pytest (test_agent_check_interpreter.py), a command padded with spaces and a path through
# a link (test_agent_terminal.py, test_agent_rules.py), a file the agent cannot read (test_agent_endings.py). None may
# give done or run anything unapproved.
# A pytest that runs nothing and says all passed (tests/agent/test_agent_check_interpreter.py has the same).
STAND_IN_PYTEST = "import sys\n\n\ndef main(args=None, plugins=()):\n    print('3 passed')\n    return 0\n\n\n"
STAND_IN_PYTEST += "def console_main():\n    sys.exit(main())\n\n\nif __name__ == '__main__':\n    console_main()\n"
# More spaces than an 80x24 screen holds (the scripted Flint's window holds the command three times over).
PADDED = "ls -la" + " " * 2_400 + "; python3 -c \"open('ran-padded', 'w')\""


def run(command: str) -> dict[str, Any]:
    return fake_llama.tool_call("run", {"command": command})


def events_of(out_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out_dir / "events.jsonl").read_text().splitlines()]


def run_in_docker(
    sandboxes: Any, forwarded: Any, workdir: Path, out_dir: Path, script: list[dict[str, Any]], visible: list[str]
) -> list[dict[str, Any]]:
    """The article's agent (part3+, `--approve no`) in a docker sandbox on `script`; its trace."""
    _, flint, _, flint_url, _ = forwarded
    flint.add(*script)
    agent = article_run("--approve", "no", "--max-steps", str(len(script)), preset="part3+")
    done = sandboxes(flint_url).run_agent(workdir, out_dir, "TASK.md", visible, agent)
    assert done.infra_error is None and not done.timed_out, done.output[-2000:]
    assert "Traceback" not in done.output, done.output[-2000:]
    return events_of(out_dir)


@pytest.mark.parametrize("attack", list(PACKAGE_ATTACKS))
def test_a_test_package_patched_to_patch_pytest_gives_no_done(
    sandboxes: Any, forwarded: Any, tmp_path: Path, attack: str
) -> None:
    workdir, out_dir = todo_work_copy(tmp_path)
    (workdir / "tests").mkdir()
    (workdir / "test_todo.py").rename(workdir / "tests" / "test_todo.py")
    (workdir / "tests" / "__init__.py").write_text("")
    script = [*PACKAGE_ATTACKS[attack], fake_llama.prose("Done.")]

    events = run_in_docker(sandboxes, forwarded, workdir, out_dir, script, ["tests/test_todo.py"])

    [check] = [e for e in events if e["event"] == "done_check"]
    assert not check["passed"] and "failed" in check["summary"], check
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "step_limit"
    assert (workdir / "tests" / "__init__.py").read_text() == ""


@pytest.mark.parametrize("where", ["pytest.py", "pytest/__init__.py"])
def test_a_pytest_of_the_repository_never_stands_in_for_pytest(
    sandboxes: Any, forwarded: Any, tmp_path: Path, where: str
) -> None:
    workdir, out_dir = todo_work_copy(tmp_path)
    script = [write(where, STAND_IN_PYTEST), write("todo.py", BROKEN_TODO), write("test_new.py", NEW_TEST)]

    events = run_in_docker(
        sandboxes, forwarded, workdir, out_dir, [*script, fake_llama.prose("Done.")], ["test_todo.py"]
    )

    [check] = [e for e in events if e["event"] == "done_check"]
    assert not check["passed"] and "3 failed" in check["summary"], check
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "step_limit"


def test_a_padded_command_and_a_path_through_a_link_run_nothing_unapproved_and_an_unreadable_file_is_one_note(
    sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    """`pytest -q link/../..` reads `..` lexically: in /repo that is the whole root. The padded command is judged
    whole. A file the repository's owner cannot read is skipped with a note at the start, not a traceback."""
    workdir, out_dir = todo_work_copy(tmp_path)
    (workdir / "sub" / "deeper").mkdir(parents=True)
    (workdir / "link").symlink_to(Path("sub") / "deeper")
    (workdir / "secret.txt").write_text("nobody's\n")
    (workdir / "secret.txt").chmod(0)
    commands = [PADDED, "pytest -q link/../..", "python -m pytest -q link/../../tmp"]
    script = [*map(run, commands), fake_llama.prose("Done.")]

    events = run_in_docker(sandboxes, forwarded, workdir, out_dir, script, ["test_todo.py"])

    approvals = [e for e in events if e["event"] == "approval"]
    assert [(a["command"][:20], a["decision"], a["by"]) for a in approvals] == [
        (command[:20], "refused", "flag") for command in commands
    ]
    assert not (workdir / "ran-padded").exists()
    assert events[0]["event"] == "start" and events[0]["unreadable"] == ["secret.txt"], events[0]
    assert events[-1]["event"] == "stop" and events[-1]["reason"] == "done"


@pytest.mark.parametrize("mode", ["ask", "jeff", "yes"])
def test_a_padded_command_is_judged_and_shown_whole_in_every_approval_mode(
    sandboxes: Any, forwarded: Any, tmp_path: Path, mode: str
) -> None:
    """`--approve no` refuses it above. `ask` with nobody at the sandbox's stdin: the question shows the command's
    real text past its padding, and nobody answered yes. `jeff`: Jeff's question holds the whole command, and his no
    refuses it. `yes` runs every command by its meaning; its console line shows the text that ran."""
    workdir, out_dir = todo_work_copy(tmp_path)
    _, flint, jeff, flint_url, jeff_url = forwarded
    flint.add(run(PADDED), fake_llama.prose("Done."))
    jeff.add(fake_llama.prose("no: after the padding it writes a file"))
    agent = article_run("--approve", mode, "--max-steps", "2", preset="part3+")

    done = sandboxes(flint_url, jeff_url).run_agent(workdir, out_dir, "TASK.md", ["test_todo.py"], agent)

    assert done.infra_error is None and "Traceback" not in done.output, done.output[-2000:]
    [approval] = [e for e in events_of(out_dir) if e["event"] == "approval"]
    assert approval["command"] == PADDED
    shown = legible(PADDED)  # ls -la⟨2400 spaces⟩; python3 -c "open('ran-padded', 'w')"
    if mode == "ask":
        rows = done.output[done.output.index(f"a command of {len(PADDED)} characters:") :].split("Run it?")[0]
        assert "".join(row[2:] for row in rows.splitlines() if row.startswith("| ")) == shown  # Jeff's rows apart
    if mode == "jeff":
        assert [r["messages"][-1]["content"] for r in jeff.requests] == [f"Command: {PADDED}"]
    decision = ("run", "flag") if mode == "yes" else ("refused", "user" if mode == "ask" else "jeff")
    assert (approval["decision"], approval["by"]) == decision
    assert f"{decision[0]} by {decision[1]}: {shown}" in done.output  # the console line, whole
    assert (workdir / "ran-padded").exists() == (mode == "yes")


def test_sigterm_mid_command_ends_the_agent_with_stop_and_one_line(
    client: Any, names: BenchNames, sandboxes: Any, forwarded: Any, tmp_path: Path
) -> None:
    """As `docker stop` ends a sandbox: SIGTERM to the agent (the container's first process) while a command of the
    model's runs: the agent ends at once (not after the command's 60 s), the trace ends with `stop`, and it says so in
    one line. Whether the command's session is killed is tests/agent/test_agent_endings.py's: here the container's
    end would kill it anyway."""
    workdir, out_dir = todo_work_copy(tmp_path)
    script = [run("sleep 60"), fake_llama.prose("Done.")]
    _, flint, _, flint_url, _ = forwarded
    flint.add(*script)
    agent = article_run("--approve", "yes", "--max-steps", "2", preset="part3+")
    ended: list[Any] = []
    runner = threading.Thread(
        target=lambda: ended.append(
            sandboxes(flint_url).run_agent(workdir, out_dir, "TASK.md", ["test_todo.py"], agent)
        )
    )
    started = time.monotonic()
    runner.start()
    sandbox = None
    while sandbox is None and time.monotonic() - started < 60:
        time.sleep(0.2)
        for container in client.containers.list(filters={"label": f"agentbench.instance={names.instance}"}):
            with contextlib.suppress(docker.errors.APIError):  # it may end between the listing and the question
                if any("sleep 60" in " ".join(row) for row in container.top()["Processes"] or []):
                    sandbox = container
    assert sandbox is not None, "the command never started"
    sandbox.kill(signal="SIGTERM")
    runner.join(60)

    [done] = ended
    assert not done.timed_out and time.monotonic() - started < 50, done.output[-2000:]
    assert "Traceback" not in done.output and "ended by SIGTERM" in done.output, done.output[-2000:]
    stop = events_of(out_dir)[-1]
    assert stop["event"] == "stop" and stop["reason"] == "interrupted" and "SIGTERM" in stop["message"], stop
