"""Where grading pytest runs: a locked-down container (docker), or a subprocess here (local).

Both start the grading supervisor (bench/score/supervisor.py) as `python -I -B -c SOURCE`, behind a filter that
refuses it and its children any Unix socket (bench/score/socket_filter.py: the engine's socket), with the sessions to
run in its environment (GRADING_SPEC), never on its command line or on disk: the hidden tests travel there, so
no file the tests' code could read holds them before pytest has imported them. The supervisor copies the prepared
folder afresh for each session, writes the session's files into the copy, runs pytest and prints one report after a
marker line; every session's output, witness records and junit XML come back in it.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.containers.engine import owner_for_container, role_labels, run_container
from bench.errors import ScoringError
from bench.priority import container_weight
from bench.processes import run_to_end
from bench.sandbox.base import Engine

SUPERVISOR_SOURCE = Path(__file__).with_name("supervisor.py").read_text()  # this package's, not the checkout's
# Installs the socket filter, then becomes `python -I -B -c SUPERVISOR_SOURCE` (its argument) in the same process.
BOOT_SOURCE = Path(__file__).with_name("socket_filter.py").read_text() + (
    "\ninstall()\nimport sys\nos.execv(sys.executable, [sys.executable, '-I', '-B', '-c', sys.argv[1]])\n"
)
SPEC_VARIABLE = "BENCH_GRADING_SPEC"
SPEC_CHUNK = 100_000  # characters per environment variable (Linux takes up to 128 KiB each)
SPEC_LIMIT = 1_500_000  # characters in all, well within the 2 MiB the kernel allows a process's arguments
# The whole report: junit XML, witness records and output of each session, JSON-escaped.
REPORT_LIMIT = 96 * 1024 * 1024


@dataclass(frozen=True)
class GraderLimits:
    memory: str = "2g"
    cpus: float = 1.0
    pids: int = 256
    work_dir_size: str = "512m"  # the tmpfs the sessions' copies are made in
    tmp_size: str = "256m"


def locked_down(
    source: Path, limits: GraderLimits, labels: dict[str, str], *, exec_tmp: bool = False
) -> dict[str, Any]:
    """A grader container's options beside its image, command and environment: `source` (the grading copy) read-only
    at /src, run as its owner; /grade (the owner's) and /tmp in memory; no network, a read-only root, no capabilities,
    no new privileges, the limits' memory, CPUs and pids; the CPU weight of the thread starting it (bench/priority.py).
    `exec_tmp`: /tmp allows exec too (compilers run what they
    build; pytest does not need it)."""
    user = owner_for_container(source)
    uid, gid = user.split(":")
    return {
        "user": user,
        "working_dir": "/",
        "volumes": {str(source): {"bind": "/src", "mode": "ro"}},
        "tmpfs": {
            "/grade": f"size={limits.work_dir_size},mode=0700,uid={uid},gid={gid},exec",
            "/tmp": f"size={limits.tmp_size},mode=1777{',exec' if exec_tmp else ''}",
        },
        "network_mode": "none",
        "labels": labels,
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "mem_limit": limits.memory,
        "memswap_limit": limits.memory,
        "nano_cpus": int(limits.cpus * 1e9),
        "pids_limit": limits.pids,
        **container_weight(),
    }


@dataclass(frozen=True)
class Session:
    """One pytest session. A plain one (a solution's own tests) runs in the repository copy with the copy last on
    sys.path. A judged one (`style` library or program) keeps the tests and the bench's plugins in folders of their
    own beside the copy (bench/score/supervisor.py): library-style tests meet the repository's modules as stand-ins
    whose code runs in a process of its own (bench/score/standin.py); program-style ones meet none of it."""

    args: list[str]
    files: dict[str, str] = field(default_factory=dict)  # path in the copy -> text, replacing whatever is there
    style: str = "plain"  # plain | library | program
    tests: dict[str, str] = field(default_factory=dict)  # judged: test and support files, in the tests' folder
    run: list[str] = field(default_factory=list)  # judged: the files of `tests` pytest runs, in order
    plugins: dict[str, str] = field(default_factory=dict)  # judged: the plugin folder's files (the witness, ...)
    plugin_folder: str = ""  # plain: a folder of the copy put first on sys.path
    junit: str = ""  # plain: the junit XML to read back, relative to the copy
    hide: bool = False  # judged: the witness deletes the tests' folder once the tests are imported

    def as_spec(self) -> dict[str, Any]:
        if self.style == "plain":
            return {
                "style": "plain",
                "args": self.args,
                "files": self.files,
                "plugins": self.plugin_folder,
                "junit": self.junit,
            }
        return {
            "style": self.style,
            "args": self.args,
            "files": self.files,
            "tests": self.tests,
            "run": self.run,
            "plugins": self.plugins,
            "hide": self.hide,
        }


@dataclass(frozen=True)
class PytestRun:
    exit_code: int | None
    output: str
    timed_out: bool
    junit_xml: str | None = None
    witness: str = ""  # the witness plugin's records, one JSON line each
    witness_problem: str | None = None  # what the supervisor saw wrong on the witness's channel
    unread: str | None = None  # why no junit XML was read back (none, not a file, too large, pytest killed)


class Grader(Protocol):
    def run_sessions(self, workdir: Path, sessions: list[Session], timeout_s: float) -> list[PytestRun]: ...


def junit_path(args: list[str]) -> str:
    """The report path a `--junitxml=PATH` argument names, relative to the copy; "" when there is none."""
    return next((arg.split("=", 1)[1] for arg in args if arg.startswith("--junitxml=")), "")


def run_pytest(grader: Grader, workdir: Path, args: list[str], timeout_s: float, plugins: str = "") -> PytestRun:
    """One plain pytest session with the copy last on sys.path (solution tests, probes)."""
    session = Session(args, plugin_folder=plugins, junit=junit_path(args))
    return grader.run_sessions(workdir, [session], timeout_s)[0]


def spec_environment(spec: dict[str, Any]) -> dict[str, str]:
    """The spec as environment variables: compressed, in chunks that fit the kernel's limit on each."""
    packed = base64.b64encode(zlib.compress(json.dumps(spec).encode(), 9)).decode()
    if len(packed) > SPEC_LIMIT:
        raise ScoringError(f"the grading sessions' files come to {len(packed)} characters packed, over {SPEC_LIMIT}")
    chunks = [packed[i : i + SPEC_CHUNK] for i in range(0, len(packed), SPEC_CHUNK)]
    return {f"{SPEC_VARIABLE}_{i}": chunk for i, chunk in enumerate(chunks)}


def read_report(output: str, marker: str, sessions: int, timed_out: bool) -> list[PytestRun]:
    """The supervisor's report after its marker line; runs that say why not when there is none."""
    _, marked, report = output.rpartition(f"\n{marker}\n")
    try:
        runs = json.loads(report)["runs"] if marked else None
    except (ValueError, KeyError, TypeError):
        runs = None
    if not isinstance(runs, list) or len(runs) != sessions:
        why = output[-2000:] if output.strip() else "no output"
        return [PytestRun(None, f"the grading supervisor gave no report: {why}", timed_out) for _ in range(sessions)]
    return [
        PytestRun(
            exit_code=run.get("exit_code"),
            output=str(run.get("output", "")),
            timed_out=bool(run.get("timed_out")),
            junit_xml=run.get("junit"),
            witness=str(run.get("witness", "")),
            witness_problem=run.get("witness_problem"),
            unread=run.get("unread") if isinstance(run.get("unread"), str) else None,
        )
        for run in runs
    ]


def _spec(sessions: list[Session], source: str, scratch: str, timeout_s: float, kill_all: bool) -> dict[str, Any]:
    marker = f"bench-grading-report-{secrets.token_hex(8)}"
    return {
        "marker": marker,
        "source": source,
        "scratch": scratch,
        "timeout_s": timeout_s,
        "kill_all": kill_all,
        "runs": [s.as_spec() for s in sessions],
    }


class DockerGrader:
    """pytest in a fresh container: no network, non-root, no new privileges, no capabilities, read-only root, the
    copies in a size-limited tmpfs, and CPU, memory and process limits. The supervisor is its PID 1."""

    def __init__(
        self, client: Any, image: str, limits: GraderLimits | None = None, labels: dict[str, str] | None = None
    ) -> None:
        self.client = client
        self.image = image
        self.limits = limits or GraderLimits()
        self.labels = labels or role_labels("grader")  # a bench's grader also carries its owner label

    def run_sessions(self, workdir: Path, sessions: list[Session], timeout_s: float) -> list[PytestRun]:
        spec = _spec(sessions, "/src", "/grade", timeout_s, kill_all=True)
        code, timed_out, logs = run_container(
            self.client,
            timeout_s + 30,
            REPORT_LIMIT,
            image=self.image,
            command=["python3", "-I", "-B", "-c", BOOT_SOURCE, SUPERVISOR_SOURCE],
            environment={"HOME": "/tmp", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **spec_environment(spec)},
            **locked_down(workdir, self.limits, self.labels),
        )
        return read_report(logs, spec["marker"], len(sessions), timed_out)


class LocalGrader:
    """pytest in a subprocess on this machine. It shuts out planted configuration, not hostile code: use Docker."""

    def run_sessions(self, workdir: Path, sessions: list[Session], timeout_s: float) -> list[PytestRun]:
        scratch = Path(tempfile.mkdtemp(prefix="bench-sessions-"))
        try:
            spec = _spec(sessions, str(workdir), str(scratch), timeout_s, kill_all=False)
            # -I: no PYTHON* variables, no user site, and no folder of ours on sys.path at start-up; -B: no .pyc.
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "BENCH_"))}
            env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **spec_environment(spec))
            command = [sys.executable, "-I", "-B", "-c", BOOT_SOURCE, SUPERVISOR_SOURCE]
            _, timed_out, output = run_to_end(
                command, cwd=scratch, env=env, timeout_s=timeout_s + 30, output_limit=REPORT_LIMIT
            )
            return read_report(output, spec["marker"], len(sessions), timed_out)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def grader_for(engine: Engine | None) -> Grader:
    """A grader as strong as the sandbox: a fresh container in the sandboxes' engine, no network; or local."""
    if engine is None:
        return LocalGrader()
    return DockerGrader(engine.client, engine.image, labels=engine.names.labels("grader"))


def make_grader(requested: str, checkout: Path) -> Grader:
    """`bench score --sandbox KIND`: the grader of that sandbox kind (`auto` as bench run chooses it)."""
    return choose_grader(requested, checkout)[0]


def choose_grader(requested: str, checkout: Path) -> tuple[Grader, str, str]:
    """The grader of sandbox kind `requested` (`auto` as bench run chooses it), the kind and why it was chosen
    (`checkout`: this repository, whose sandbox image a container grader runs in)."""
    from bench.config import BenchConfig
    from bench.containers.engine import docker_or_none
    from bench.containers.names import BenchNames
    from bench.ownership import new_instance_id
    from bench.sandbox.kinds import choose_sandbox, make_sandboxes  # sandbox kinds load only when one is used

    docker = docker_or_none() if requested in ("auto", "docker") else None
    choice = choose_sandbox(requested, docker)
    engine = make_sandboxes(
        choice.kind, BenchConfig(), BenchNames(new_instance_id()), docker=docker, checkout=checkout
    ).engine
    return grader_for(engine), choice.kind, choice.reason
