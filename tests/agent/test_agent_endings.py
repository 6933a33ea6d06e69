"""Every way the agent can end gives one line, never a traceback, and a trace that ends with `stop`: files in the
repository its user cannot read, SIGTERM and SIGHUP (the running command's session and the check's copy go with
it), a closed stdout, a full disk under the trace."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_helpers import ROOT, read_events

from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

pytestmark = pytest.mark.usefixtures("child_processes")
NOBODY = 65534


def agent_args(repo: Path, url: str, events: Path, *extra: str) -> list[str]:
    args = ["--repo", str(repo), "--task", "t", "--flint", url, "--events", str(events), "--no-jeff"]
    return [*args, "--retry-delay", "0.01", *extra]


@contextlib.contextmanager
def started_agent(args: list[str], **popen: object) -> Iterator[subprocess.Popen[str]]:
    """`python -m agent` as a process of its own, killed and its pipes closed whatever the test's outcome."""
    options: dict[str, object] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    agent = subprocess.Popen([sys.executable, "-m", "agent", *args], cwd=ROOT, **options)  # type: ignore[call-overload]
    with agent:
        try:
            yield agent
        finally:
            if agent.poll() is None:
                agent.kill()


def wait_for(condition: Callable[[], object], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    with contextlib.suppress(OSError):
        return "State:\tZ" in status.read_text()
    return True


def one_line(stderr: str) -> None:
    assert "Traceback" not in stderr and stderr.count("\n") <= 1, stderr


# Unreadable files: the agent runs as root in a user namespace of its own, where a file of a user the namespace does
# not map (nobody) is as closed to it as to any other user.


@functools.cache
def can_unshare() -> bool:
    found = shutil.which("unshare") is not None
    return found and subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="making files of another user needs root")
@pytest.mark.parametrize(("preset", "reason"), [("part3", "step_limit"), ("part3+", "done")])
def test_files_the_agent_cannot_read_are_skipped_with_a_note(
    repo: Path, tmp_path: Path, preset: str, reason: str
) -> None:
    """part3's pytest, in the repository as it is, stops at the folder it cannot read (as the repository's own pytest
    would); the copy of part3+ leaves out what cannot be read, and its check passes."""
    if not can_unshare():
        pytest.skip("needs `unshare` and user namespaces")
    (repo / "secret.txt").write_text("nobody's\n")
    (repo / "private").mkdir()
    (repo / "private" / "data.txt").write_text("nobody's\n")
    for path, mode in ((repo / "private" / "data.txt", 0o600), (repo / "secret.txt", 0), (repo / "private", 0o700)):
        os.chown(path, NOBODY, NOBODY)
        path.chmod(mode)
    events = tmp_path / "events.jsonl"
    with FakeLlama([fl.prose("done")]) as flint:
        args = agent_args(repo, flint.url, events, "--preset", preset, "--max-steps", "1")
        agent = [sys.executable, "-m", "agent", *args]
        done = subprocess.run(["unshare", "-U", "-r", *agent], cwd=ROOT, capture_output=True, text=True, timeout=120)
    one_line(done.stderr)
    trace = read_events(events)
    assert trace[0]["unreadable"] == ["private", "secret.txt"]
    assert "2 files or folders of the repository cannot be read" in done.stdout
    assert trace[-1]["reason"] == reason and done.returncode == (reason != "done"), done.stdout


# Signals: the bench (or a person) ends the agent with SIGTERM, a closed terminal with SIGHUP.


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_command_kills_the_command_and_writes_stop(repo: Path, tmp_path: Path, signum: int) -> None:
    events = tmp_path / "ended.jsonl"
    script = [fl.tool_call("run", {"command": "echo $$ > shell.pid; sleep 60"})]
    with FakeLlama(script) as flint, started_agent(agent_args(repo, flint.url, events, "--approve", "yes")) as agent:
        wait_for(lambda: (repo / "shell.pid").exists() and (repo / "shell.pid").read_text().strip())
        agent.send_signal(signum)
        out, err = agent.communicate(timeout=30)
    one_line(err)
    wait_for(lambda: gone(int((repo / "shell.pid").read_text())))
    stop = read_events(events)[-1]
    assert stop["reason"] == "interrupted" and signal.Signals(signum).name in stop["message"]
    assert (
        agent.returncode == 1 and f"stopped: interrupted after 1 step(s): ended by {signal.Signals(signum).name}" in out
    )


SLOW_TEST = """
import os, time

def test_slow():
    with open(os.environ["MARK"], "w") as f:
        f.write(f"{os.getcwd()}\\n{os.getpid()}\\n")
    time.sleep(60)
"""


def test_sigterm_during_a_done_check_removes_its_copy_and_ends_its_pytest(repo: Path, tmp_path: Path) -> None:
    events, mark = tmp_path / "ended.jsonl", tmp_path / "mark.txt"
    script = [fl.tool_call("write_file", {"path": "test_slow.py", "content": SLOW_TEST}), fl.prose("done")]
    with FakeLlama(script) as flint:
        args = agent_args(repo, flint.url, events, "--preset", "part3+")
        with started_agent(args, env={**os.environ, "MARK": str(mark)}) as agent:
            wait_for(lambda: mark.exists() and len(mark.read_text().splitlines()) == 2)
            agent.send_signal(signal.SIGTERM)
            out, err = agent.communicate(timeout=30)
    one_line(err)
    copy, pid = mark.read_text().splitlines()
    assert not Path(copy).exists() and Path(tempfile.gettempdir()) in Path(copy).parents
    wait_for(lambda: gone(int(pid)))
    assert read_events(events)[-1]["reason"] == "interrupted" and agent.returncode == 1


# Where the output goes: a console that went away, a trace on a full disk.


def test_a_closed_stdout_ends_nothing_and_prints_no_traceback(repo: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    script = [fl.tool_call("run", {"command": "ls"}), fl.prose("done")]
    with FakeLlama(script) as flint, started_agent(agent_args(repo, flint.url, events)) as agent:
        assert agent.stdout is not None
        agent.stdout.close()  # as `python -m agent ... | head -0` would
        agent.wait(timeout=60)
        assert agent.stderr is not None
        err = agent.stderr.read()
    one_line(err)
    assert read_events(events)[-1]["reason"] == "done" and agent.returncode == 0


def can_mount_a_small_disk() -> bool:
    mount = ["unshare", "-U", "-r", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]
    return can_unshare() and subprocess.run(mount, capture_output=True).returncode == 0


def test_a_full_disk_under_the_trace_still_ends_it_with_stop(repo: Path, tmp_path: Path) -> None:
    if not can_mount_a_small_disk():
        pytest.skip("needs `unshare` and user namespaces to mount a tmpfs")
    disk, kept = tmp_path / "disk", tmp_path / "kept.jsonl"
    disk.mkdir()
    fill = fl.tool_call("run", {"command": f"head -c 4000000 /dev/zero > {disk}/fill"})
    script = [fl.tool_call("run", {"command": "ls"}), fill, *[fl.tool_call("run", {"command": "ls"})] * 3]
    script.append(fl.prose("done"))
    # The trace on a disk of 1 MiB of its own (a tmpfs in a mount namespace), filled up by the model's command; the
    # trace is copied out before the namespace, and the disk, are gone.
    inner = 'mount -t tmpfs -o size=1m tmpfs "$1" && "${@:3}"; code=$?; cp "$1/events.jsonl" "$2"; exit $code'
    with FakeLlama(script) as flint:
        agent = [sys.executable, "-m", "agent", *agent_args(repo, flint.url, disk / "events.jsonl", "--approve", "yes")]
        command = ["unshare", "-U", "-r", "-m", "bash", "-c", inner, "bash", str(disk), str(kept), *agent]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    one_line(done.stderr)
    assert "event trace" in done.stderr and "No space left" in done.stderr
    trace = read_events(kept)
    assert trace[-1]["reason"] == "done" and trace[-1]["events_dropped"] > 0
    assert "stopped: done after 6 step(s)" in done.stdout and done.returncode == 0
