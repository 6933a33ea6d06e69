"""A bench instance's state file and the reaper: what a dead bench recorded is removed, and only that, and only once
its owner is proven gone (pid and start time on this host, in this boot); a live bench is never touched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.ownership import Ownership
from bench.processes import is_running, start_time
from bench.run.instance import BenchInstance, reap_dead, state_dir


def dead_pid() -> tuple[int, int | None]:
    """The pid and start time of a process that has ended (and been waited for)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = start_time(child.pid)
    child.wait()
    return child.pid, started


def sleeper(new_session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300"], start_new_session=new_session)


def record_of(folder: Path, owner: tuple[int, int | None], **changes: object) -> Ownership:
    ownership = Ownership.new(folder / "x.json")
    ownership.state_file = folder / f"{ownership.instance}.json"
    ownership.owner_pid, ownership.owner_start_time = owner
    for key, value in changes.items():
        setattr(ownership, key, value)
    ownership.save()
    return ownership


def test_the_state_file_is_written_whole_and_read_back_the_same(tmp_path: Path) -> None:
    ownership = Ownership.new(tmp_path / "abc.json")
    ownership.out = "/r/results.csv"
    ownership.process_started(os.getpid(), "flint", 41234, tmp_path / "flint.log")
    ownership.add_folder(tmp_path / "agentbench-x")
    data = json.loads((tmp_path / "abc.json").read_text())
    assert data["owner"] == {"pid": os.getpid(), "start_time": start_time(os.getpid())}
    assert data["processes"][0] | {"start_time": 0} == {
        "pid": os.getpid(),
        "start_time": 0,
        "what": "flint",
        "port": 41234,
        "log": str(tmp_path / "flint.log"),
    }
    assert Ownership.load(tmp_path / "abc.json").as_json() == data
    assert [p.name for p in tmp_path.iterdir()] == ["abc.json"]  # no partial file left


@pytest.mark.usefixtures("child_processes")
def test_an_owner_is_alive_only_while_its_pid_names_the_same_process(tmp_path: Path) -> None:
    assert record_of(tmp_path, (os.getpid(), start_time(os.getpid()))).owner_alive()
    assert not record_of(tmp_path, dead_pid()).owner_alive()
    reused = (os.getpid(), (start_time(os.getpid()) or 0) + 1)  # our pid, another process's start time
    assert not record_of(tmp_path, reused).owner_alive()
    assert not record_of(tmp_path, (os.getpid(), start_time(os.getpid())), boot_id="another boot").owner_alive()
    # Another machine's record (a shared home): its pids mean nothing here, so it is never taken for dead.
    assert record_of(tmp_path, dead_pid(), host="another-host").owner_alive()


@pytest.mark.usefixtures("child_processes")
def test_a_dead_benchs_servers_folder_and_state_go_and_nothing_else(tmp_path: Path) -> None:
    states = tmp_path / "states"
    orphan, stranger = sleeper(), sleeper()
    dead = record_of(states, dead_pid())
    folder = tmp_path / f"agentbench-{dead.instance}"
    (folder / "run").mkdir(parents=True)
    dead.add_folder(folder)
    dead.process_started(orphan.pid, "flint", 1234)
    # The stranger holds a pid the dead bench once recorded, but started at another time: a reused pid.
    dead.processes.append(type(dead.processes[0])(stranger.pid, (start_time(stranger.pid) or 0) - 1, "jeff"))
    dead.save()
    live_server = sleeper()
    live = record_of(states, (os.getpid(), start_time(os.getpid())))
    live.process_started(live_server.pid, "flint")
    try:
        lines = reap_dead(states)
        assert orphan.wait(15) is not None  # signalled by the reaper
        assert is_running(stranger.pid, start_time(stranger.pid)), "a process the dead bench did not start was killed"
        assert is_running(live_server.pid, start_time(live_server.pid)), "a live bench's server was killed"
        assert not folder.exists() and not dead.state_file.exists()  # type: ignore[union-attr]
        assert live.state_file.exists()  # type: ignore[union-attr]
        (line,) = lines
        assert f"bench {dead.instance}" in line and f"flint (pid {orphan.pid})" in line and str(folder) in line
        assert "jeff" not in line
    finally:
        for process in (orphan, stranger, live_server):
            process.kill()
            process.wait()


@pytest.mark.usefixtures("child_processes")
def test_a_recorded_process_that_leads_no_session_is_signalled_alone(tmp_path: Path) -> None:
    orphan = sleeper(new_session=False)  # in our process group: signalling its group would signal us
    dead = record_of(tmp_path, dead_pid())
    dead.process_started(orphan.pid, "flint")
    try:
        reap_dead(tmp_path)
        assert orphan.wait(15) is not None
    finally:
        orphan.kill()
        orphan.wait()


def test_a_damaged_state_file_is_named_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "0badf00d.json").write_text("{not json")
    (line,) = reap_dead(tmp_path)
    assert "0badf00d.json is not a bench state file" in line and (tmp_path / "0badf00d.json").exists()


@pytest.mark.usefixtures("child_processes")
def test_a_recorded_folder_outside_the_benchs_own_is_never_removed(tmp_path: Path) -> None:
    precious, other = tmp_path / "results", tmp_path / "agentbench-0badf00d"
    precious.mkdir()
    other.mkdir()
    record_of(tmp_path / "states", dead_pid(), folders=[str(precious), str(other)])
    reap_dead(tmp_path / "states")
    assert precious.is_dir() and other.is_dir()


@pytest.mark.usefixtures("child_processes")
def test_an_instance_records_itself_keeps_its_temp_files_and_removes_them_at_its_end(
    tmp_path: Path, bench_state_dir: Path
) -> None:
    import tempfile

    assert state_dir() == bench_state_dir
    instance = BenchInstance(Ownership.new())
    assert instance.start(tmp_path / "results.csv") == []
    state = bench_state_dir / f"{instance.ownership.instance}.json"
    assert json.loads(state.read_text())["folders"] == [str(instance.tmp)]
    with instance.temp_files():
        made = Path(tempfile.mkdtemp())
    assert made.parent == instance.tmp
    instance.close()
    assert not instance.tmp.exists() and not state.exists()


@pytest.mark.usefixtures("child_processes")
def test_a_killed_bench_process_is_reaped_by_the_next_one(tmp_path: Path) -> None:
    """A real process writes a state file naming a server it started, then dies by SIGKILL: the next start ends
    the server and removes the folder."""
    script = (
        "import subprocess, sys, time\n"
        "from pathlib import Path\n"
        "from bench.ownership import Ownership\n"
        "o = Ownership.new(Path(sys.argv[1]) / 'x.json')\n"
        "o.state_file = Path(sys.argv[1]) / f'{o.instance}.json'\n"
        "server = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "o.process_started(server.pid, 'flint')\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    bench = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert bench.stdout is not None
    server_pid = int(bench.stdout.readline())
    server_started = start_time(server_pid)
    assert reap_dead(tmp_path) == []  # its owner lives: nothing is touched
    assert is_running(server_pid, server_started)
    bench.send_signal(signal.SIGKILL)
    bench.wait()
    bench.stdout.close()
    assert is_running(server_pid, server_started)  # the orphan, as a killed bench leaves it
    (line,) = reap_dead(tmp_path)
    assert f"flint (pid {server_pid})" in line
    assert not is_running(server_pid, server_started)
    assert list(tmp_path.glob("*.json")) == []
