"""Where grading pytest runs: a locked-down container (docker), or a subprocess here (local).

Both start pytest the same way: `python -I -B -c BOOTSTRAP IMPORT_DIR ARGS...`, i.e. `python -m pytest ARGS` with
the bench's own plugin folder (IMPORT_DIR, relative to the copy; "" for none) first on sys.path, since -I keeps
PYTHONPATH and the copy itself off it. The junit XML named by `--junitxml=` comes back in PytestRun.junit_xml.
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.containers.engine import LABEL, owner_for_container, run_container
from bench.processes import run_to_end
from bench.sandbox.base import Engine
from bench.untrusted import read_untrusted

BOOTSTRAP = (
    "import os, sys\n"
    "folder = sys.argv.pop(1)\n"
    "if folder:\n"
    "    sys.path.insert(0, os.path.abspath(folder))\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)
JUNIT_LIMIT = 8 * 1024 * 1024  # bytes of junit XML read back; a report this large is not one pytest wrote for us
# The grading container's output is kept up to this: its last half holds the marker line and the report whole.
GRADER_OUTPUT_LIMIT = 2 * (JUNIT_LIMIT + 1024 * 1024)

# The grading container runs the agent's code: it gets no more than the agent's own sandbox, and less.
# /src is the prepared copy (read-only); the script copies it into /grade, a size-limited tmpfs, runs pytest there,
# kills whatever the tests left running, then prints a marker line with pytest's status and the junit XML, so the
# report comes back through the container's output and nothing the tests did can outlive or follow it.
GRADE_SCRIPT = r"""
junit=$1; mark=$2; shift 2
cp -R /src/. /grade/ || exit 90
cd /grade || exit 90
python3 -I -B -c "$BOOTSTRAP" "$@"
status=$?
kill -9 -1 2>/dev/null
printf '\n%s %s\n' "$mark" "$status"
if [ -n "$junit" ] && [ -f "$junit" ] && [ ! -L "$junit" ]; then head -c "$LIMIT" "$junit"; fi
exit "$status"
"""


@dataclass(frozen=True)
class GraderLimits:
    memory: str = "2g"
    cpus: float = 1.0
    pids: int = 256
    work_dir_size: str = "512m"  # the tmpfs the copy is graded in
    tmp_size: str = "256m"


@dataclass(frozen=True)
class PytestRun:
    exit_code: int | None
    output: str
    timed_out: bool
    junit_xml: str | None = None


class Grader(Protocol):
    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float, *, import_dir: str = "") -> PytestRun: ...


def junit_path(args: list[str]) -> str:
    """The report path a `--junitxml=PATH` argument names, relative to the copy; "" when there is none."""
    return next((arg.split("=", 1)[1] for arg in args if arg.startswith("--junitxml=")), "")


class DockerGrader:
    """pytest in a fresh container: no network, non-root, no new privileges, no capabilities, read-only root, the
    copy in a size-limited tmpfs, and CPU, memory and process limits."""

    def __init__(
        self, client: Any, image: str, limits: GraderLimits | None = None, labels: dict[str, str] | None = None
    ) -> None:
        self.client = client
        self.image = image
        self.limits = limits or GraderLimits()
        self.labels = labels or {LABEL: "grader"}  # a bench's grader also carries its owner label

    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float, *, import_dir: str = "") -> PytestRun:
        mark = f"bench-grading-done-{secrets.token_hex(8)}"
        junit = junit_path(args)
        user = owner_for_container(workdir)
        uid, gid = user.split(":")
        limits = self.limits
        code, timed_out, logs = run_container(
            self.client, timeout_s, GRADER_OUTPUT_LIMIT, image=self.image, user=user, working_dir="/",
            command=["sh", "-c", GRADE_SCRIPT, "grade", junit, mark, import_dir, *args],
            volumes={str(workdir): {"bind": "/src", "mode": "ro"}},
            tmpfs={
                "/grade": f"size={limits.work_dir_size},mode=0700,uid={uid},gid={gid},exec",
                "/tmp": f"size={limits.tmp_size},mode=1777",
            },
            environment={
                "HOME": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "BOOTSTRAP": BOOTSTRAP,
                "LIMIT": str(JUNIT_LIMIT),
            },
            network_mode="none", labels=self.labels, read_only=True, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], mem_limit=limits.memory, memswap_limit=limits.memory,
            nano_cpus=int(limits.cpus * 1e9), pids_limit=limits.pids,
        )  # fmt: skip
        output, marked, report = logs.rpartition(f"\n{mark} ")
        if not marked:  # the script never got past pytest (killed at the timeout, or the copy failed)
            return PytestRun(exit_code=code, output=logs, timed_out=timed_out)
        junit_xml = report.partition("\n")[2]
        return PytestRun(exit_code=code, output=output, timed_out=timed_out, junit_xml=junit_xml if junit else None)


class LocalGrader:
    """pytest in a subprocess on this machine. It shuts out planted configuration, not hostile code: use Docker."""

    def run_pytest(self, workdir: Path, args: list[str], timeout_s: float, *, import_dir: str = "") -> PytestRun:
        # -I: no PYTHON* variables, no user site, and the copy stays off sys.path at start-up. Since -I also
        # ignores PYTHONDONTWRITEBYTECODE, -B is what keeps .pyc files out of the copy.
        command = [sys.executable, "-I", "-B", "-c", BOOTSTRAP, import_dir, *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
        env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
        code, timed_out, output = run_to_end(command, cwd=workdir, env=env, timeout_s=timeout_s)
        junit = junit_path(args)
        junit_xml = (
            read_untrusted(workdir / junit, JUNIT_LIMIT, trusted=workdir)[0] if junit and not timed_out else None
        )
        return PytestRun(exit_code=code, output=output, timed_out=timed_out, junit_xml=junit_xml)


def grader_for(engine: Engine | None) -> Grader:
    """A grader as strong as the sandbox: a fresh container in the sandboxes' engine, no network; or local."""
    if engine is None:
        return LocalGrader()
    return DockerGrader(engine.client, engine.image, labels=engine.names.labels("grader"))


def make_grader(requested: str) -> Grader:
    """`bench score --sandbox KIND`: the grader of that sandbox kind (`auto` as bench run chooses it)."""
    from bench.config import BenchConfig
    from bench.containers.engine import docker_or_none
    from bench.containers.names import BenchNames
    from bench.ownership import new_instance_id
    from bench.sandbox.kinds import choose_sandbox, make_sandboxes  # sandbox kinds load only when one is used

    docker = docker_or_none() if requested in ("auto", "docker") else None
    kind = choose_sandbox(requested, docker).kind
    return grader_for(make_sandboxes(kind, BenchConfig(), BenchNames(new_instance_id()), docker=docker).engine)
