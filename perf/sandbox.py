"""What a sandbox costs a run besides the agent (figures for perf/run.py):

- the docker sandbox's lifecycle per run (the work copy put into the repository volume, the sandbox container
  created, started, stopped and removed, the files read back, the volume emptied), against the floor of the same
  image doing nothing (`docker run --rm IMAGE true`) as a ratio, target at most 2x; and, apart, what a bench's
  worker pays once for that volume and its holder (bench.containers.repo_volume);
- the local sandbox's lifecycle.

The agent in both is the real one, given a Flint that cannot be reached (a closed port on loopback, and in the
container no network at all), so it exits at once: what is measured is the sandbox, not a run.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from agent.server import Props
from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.containers.repo_volume import RepoVolume
from bench.errors import PrerequisiteError
from bench.fixtures.fixture import load_fixture
from bench.fixtures.workcopy import make_work_copy
from bench.ownership import Ownership
from bench.sandbox.base import Engine, Reach
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.local import LocalSandbox
from bench.servers.base import Endpoints
from bench.setting_types import size_bytes
from bench.testing.agents import article_run
from perf.figures import Figure, Unavailable, figure, timed

CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, the agent's first request is refused
FIXTURE = "todo_repo"


def endpoints() -> Endpoints:
    props = Props(n_ctx=4096, model="none", build="none", supports_tool_calls=True)
    return Endpoints(4096, CLOSED, props, None)


def lifecycle(sandbox: DockerSandbox | LocalSandbox) -> None:
    with tempfile.TemporaryDirectory(prefix="agentbench-perf-") as tmp:
        fixture = load_fixture(FIXTURE, ROOT)
        workdir, out = Path(tmp) / "repo", Path(tmp) / "out"
        out.mkdir()
        make_work_copy(fixture, workdir)
        run = sandbox.run_agent(
            workdir, out, str(fixture.task_file), fixture.visible_tests, article_run("--retries", "0")
        )
        if run.infra_error:
            raise RuntimeError(f"the sandbox failed: {run.infra_error}")


def fresh_volume_lifecycle(repo: RepoVolume, sandbox: DockerSandbox) -> None:
    """A run's sandbox with its repository volume (and holder) made again, as every run did before."""
    repo.remove()
    lifecycle(sandbox)


def docker_figures(quick: bool, repeats: int) -> list[Figure]:
    try:
        client = docker_client()
    except PrerequisiteError as e:
        raise Unavailable(str(e)) from e
    image = ensure_sandbox_image(client, ROOT)
    names = BenchNames(Ownership.new().instance)
    config = BenchConfig()
    repo = RepoVolume(client, image, names, size_bytes(config.sandbox_repo_size))
    sandbox = DockerSandbox(Engine("docker", client, image, names), Reach("none", CLOSED, None), config, "perf", repo)
    try:
        if not quick:
            lifecycle(sandbox)  # warm: the image's layers in the page cache
        volume = timed(lambda: fresh_volume_lifecycle(repo, sandbox), repeats)
        floor = timed(lambda: subprocess.run(["docker", "run", "--rm", image, "true"], check=True), repeats)
        full = timed(lambda: lifecycle(sandbox), repeats)
    finally:
        repo.remove()
    ratios = [f / b for f, b in zip(full, floor, strict=True)]
    return [
        figure("docker sandbox lifecycle", "s", full, None, quick),
        figure("docker sandbox lifecycle, volume and holder made and removed too", "s", volume, None, quick),
        figure("docker run --rm, the floor", "s", floor, None, quick),
        figure("docker sandbox lifecycle / floor", "x", ratios, "<= 2.0", quick),
    ]


def figures(quick: bool) -> list[Figure]:
    repeats = 1 if quick else 5
    local = LocalSandbox(endpoints(), timeout_s=60, checkout=ROOT)
    out = [figure("local sandbox lifecycle", "s", timed(lambda: lifecycle(local), repeats), "<= 1.0", quick)]
    return out + docker_figures(quick, repeats)
