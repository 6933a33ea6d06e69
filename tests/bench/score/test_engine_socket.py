"""The local grader's code cannot reach the Docker engine's socket (issue 47): Landlock does not cover connecting to a
Unix socket by path, and the engine's socket, where this user may use it, is a way to a container that reads the hidden
tests. The graders start the supervisor behind a seccomp filter (bench/score/socket_filter.py) that refuses every
process of the grading a Unix socket: the code under test's process, plain pytest (the code in the tests' process)
and the programs the tests run. Each probe here connects to the very socket this test's own process reaches first."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.fixtures.fixture import Fixture, load_fixture
from bench.score.graders import BOOT_SOURCE, LocalGrader
from bench.score.grading import score_diff

pytestmark = [pytest.mark.usefixtures("child_processes"), pytest.mark.docker]

PROBE = """
import socket


def engine():
    try:
        socket.socket(socket.AF_UNIX).connect(SOCKET)
    except PermissionError:
        return "refused"
    except OSError as e:
        return f"not reached: {e}"
    return "connected"


if __name__ == "__main__":
    print(engine())
"""
LIBRARY_TESTS = """
import probe


def test_the_code_cannot_reach_the_engine():
    assert probe.engine() == "refused"
"""
PROGRAM_TESTS = """
import subprocess
import sys
from pathlib import Path


def test_the_program_cannot_reach_the_engine():
    done = subprocess.run([sys.executable, str(Path.cwd() / "probe.py")], capture_output=True, text=True)
    assert done.stdout.strip() == "refused", done.stderr
"""


def engine_socket() -> str:
    """The engine's socket as this machine's Docker client finds it; this process must reach it, or the probes below
    would prove nothing."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    assert host.startswith("unix://"), f"the engine is not on a Unix socket here ({host})"
    path = host.removeprefix("unix://")
    with socket.socket(socket.AF_UNIX) as reach:
        reach.connect(path)
    return path


def probe_fixture(root: Path, grading: str, path: str) -> Fixture:
    name = f"engine_{grading}"
    folder, hidden = root / "fixtures" / name, root / "hidden_tests" / name
    (hidden / "solution").mkdir(parents=True)
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(f"SOCKET = {path!r}\n" + textwrap.dedent(PROBE))
    (folder / "TASK.md").write_text("Nothing to do: the test says what grading allows.\n")
    (hidden / "test_hidden_engine.py").write_text(LIBRARY_TESTS if grading == "library" else PROGRAM_TESTS)
    (folder / "fixture.yaml").write_text(
        f"task_file: TASK.md\nhidden_tests: hidden_tests/{name}\nhidden_total: 1\nexpected_hidden_passing: 1\n"
        f"max_steps: 5\nvisible_tests: []\ngrading: {grading}\nsolution_adds_tests: false\n"
    )
    return load_fixture(name, root)


@pytest.mark.parametrize("grading", ["library", "program"])
def test_no_process_of_the_local_grading_reaches_the_engines_socket(tmp_path: Path, grading: str) -> None:
    fx = probe_fixture(tmp_path / "root", grading, engine_socket())

    score = score_diff(fx, "", LocalGrader(), tmp_path / "work", timeout_s=120)

    # Library-style: both judges ran the probe (the sealed judge's code process, then plain pytest's), and the
    # verdict is plain pytest's, confirmed by the sealed one. Program-style: the program, a child of the pytest.
    assert (score.hidden_passed, score.grading_tampered) == (1, False), (score.error, score.junit_reports)
    if grading == "library":
        assert "unix sockets" in score.grading_confinement.split(";")[0], score.grading_confinement


def test_the_boot_refuses_unix_sockets_and_keeps_pipes_pairs_and_tcp(tmp_path: Path) -> None:
    """What the filter leaves: a pair of connected sockets, pipes and TCP (Landlock closes TCP to the code's process
    on its own); what it refuses: a new Unix socket, in the process and in its children."""
    check = textwrap.dedent(f"""
        import os, socket, subprocess, sys
        a, b = socket.socketpair()
        os.pipe()
        socket.socket(socket.AF_INET).close()
        try:
            socket.socket(socket.AF_UNIX).connect({engine_socket()!r})
        except PermissionError:
            print("refused")
        child = "import socket\\ntry:\\n socket.socket(socket.AF_UNIX)\\nexcept PermissionError:\\n print('refused')"
        print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True).stdout.strip())
    """)
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", BOOT_SOURCE, check], capture_output=True, text=True, timeout=60
    )

    assert done.stdout.split() == ["refused", "refused"], done.stderr
