"""The docker sandbox: one throwaway container per run, on a network that reaches only Flint and Jeff.

Two users inside it. The agent starts as root with only the SETUID and SETGID capabilities (no-new-privileges,
read-only root), opens its trace in /out (a folder only root may write), then acts as the repository's owner and
runs every model command as that owner, with no capability at all (agent/command_user.py). Giving the agent those
two capabilities is the simplest sound way to start commands as another user: no setuid program (no-new-privileges
would ignore it anyway), no second container, no Docker API inside. Commands cannot write /out or the trace, nor
signal or trace the agent, whose real uid stays root. The agent runs from /opt/agentbench, not /repo, so no module
the model writes into the repository is ever imported by the agent.

The repository is a size-limited tmpfs volume (bench.containers.repo_volume), one per sandbox kind, emptied between
runs: the work copy goes in before the run and the files come back into it after, so the rest of the bench reads
them where it always does. The container's
output is kept up to a cap (bench.containers.engine.run_container).

The docker kind (DockerSandboxes) owns the way to the servers (bench.sandbox.reach): the sandbox network, its
firewall rule, and the forwarder to servers on this host, whose bridge gateway is where those servers listen.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.agents.base import AgentCommand, Launch, Place
from bench.config import BenchConfig
from bench.containers.engine import SANDBOX_UID, docker_client, run_container
from bench.containers.forwarder import Forwarder
from bench.containers.images import ensure_sandbox_image
from bench.containers.language_images import ensure_language_image
from bench.containers.names import BenchNames
from bench.containers.network import bridge_gateway
from bench.containers.repo_volume import RepoVolume
from bench.errors import PrerequisiteError, SandboxError
from bench.languages.kinds import KINDS
from bench.sandbox.base import AgentRun, Engine, Reach
from bench.sandbox.docker_agents import OtherAgents, ProxyLog
from bench.sandbox.proxy_stop import ProxyStopped
from bench.sandbox.reach import host_port, reach_servers
from bench.sandbox.record_proxy import PROXY_LOG
from bench.servers.base import Endpoints
from bench.setting_types import size_bytes


class DockerSandboxes:
    """The docker kind: one container per run in the local Docker engine, reaching the servers it is connected to."""

    kind = "docker"

    def __init__(self, config: BenchConfig, names: BenchNames, *, docker: Any = None, checkout: Path) -> None:
        self.config = config
        client = self._client(docker)
        self.engine = Engine(self.kind, client, ensure_sandbox_image(client, checkout), names)
        self.forwarder = Forwarder(client, self.engine.image, names, config.sampling)  # passes the run's sampling
        self.reach: Reach | None = None
        self.others = OtherAgents(client, self.engine.image, names, checkout)
        self.repo = RepoVolume(self.engine.client, self.engine.image, names, size_bytes(config.sandbox_repo_size))

    @staticmethod
    def _client(docker: Any) -> Any:
        return docker or docker_client()  # the bench's one client, when it already holds it

    def server_host(self) -> str:
        return bridge_gateway(self.engine.client, self.engine.names)

    def connect(self, endpoints: Endpoints) -> None:
        self.reach = reach_servers(self.engine, self.forwarder, endpoints)
        self.others.flint = None if endpoints.gates else host_port(endpoints.flint_url, self.kind)

    def healthy(self) -> bool:
        # Reaching compose's gates needs no forwarder; otherwise it must run and answer for both servers.
        return self.forwarder.container is None or self.forwarder.healthy()

    def sandbox(self, run_label: str, language: str = "python") -> DockerSandbox:
        if self.reach is None:
            raise SandboxError("the sandboxes were not connected to servers (connect() first)")
        sandbox = DockerSandbox(
            engine=self.engine, reach=self.reach, config=self.config, run_label=run_label, repo=self.repo
        )
        sandbox.others = self.others
        # The agent works where its fixture's tests can run: the language's image (the sandbox image + a toolchain).
        sandbox.image = ensure_language_image(self.engine.client, KINDS[language], self.engine.image)
        return sandbox

    def close(self) -> None:
        self.forwarder.stop()
        self.repo.remove()


@dataclass(frozen=True)
class Start:
    """How the agent's container starts: the article's as root with two capabilities (see above), others as the
    repository's owner with none."""

    image: str
    user: str
    working_dir: str
    caps: list[str]


class DockerSandbox:
    """One throwaway container per run, on a network that reaches only Flint and Jeff."""

    others: OtherAgents | None = None  # set by the kind: other agents' images and the way to Flint for their proxy

    def __init__(self, engine: Engine, reach: Reach, config: BenchConfig, run_label: str, repo: RepoVolume) -> None:
        self.client = engine.client
        self.image = engine.image
        self.names = engine.names
        self.reach = reach
        self.config = config
        self.run_label = run_label
        self.repo = repo  # the kind's, which serves one run at a time

    trace_owner: int | None = (
        0  # the uid the agent writes events.jsonl as, seen from this host (no user namespace remapping)
    )

    def _limits(self) -> dict[str, Any]:
        return {
            "mem_limit": self.config.sandbox_memory,
            "nano_cpus": int(self.config.sandbox_cpus * 1e9),
            "pids_limit": self.config.sandbox_pids,
            "cap_drop": ["ALL"],
            "cap_add": ["SETUID", "SETGID"],  # the agent's, to start commands as the repository's owner; see above
            "security_opt": ["no-new-privileges"],
            "read_only": True,  # only the repo copy, the trace folder and /tmp are writable
            # exec: Go's and C++'s test commands build a program in /tmp and run it (Docker mounts a tmpfs noexec
            # unless told); the repository, where the agent's own programs may be, is executable anyway.
            "tmpfs": {"/tmp": "size=256m,exec"},
            **({"extra_hosts": dict(self.reach.hosts)} if self.reach.hosts else {}),
        }

    def run_agent(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent: AgentCommand
    ) -> AgentRun:
        if agent.kind.own_trace:
            how = Start(self.image, "0:0", "/opt/agentbench", ["SETUID", "SETGID"])
            place = Place(
                python="python3",
                repo="/repo",
                task_file=f"/repo/{task_file}",
                out_dir="/out",
                flint_url=self.reach.flint_url,
                jeff_url=self.reach.jeff_url,
                command_user=f"{SANDBOX_UID}:{SANDBOX_UID}",  # the volume's owner
            )
            return self._run(workdir, out_dir, visible_tests, launch=agent.launch(place), how=how)
        return self._run_other(workdir, out_dir, task_file, visible_tests, agent=agent)

    def _run_other(
        self, workdir: Path, out_dir: Path, task_file: str, visible_tests: list[str], agent: AgentCommand
    ) -> AgentRun:
        """Another agent: its image, the recording proxy before it, its log kept as the run's trace."""
        kind, others = agent.kind, self.others
        if others is None or others.flint is None:
            why = "other agents reach servers on this host only so far (embedded or external), not compose's gates"
            return AgentRun(None, False, 0.0, "", infra_error=why)
        try:
            how = Start(others.image(kind), f"{SANDBOX_UID}:{SANDBOX_UID}", "/repo", [])
        except PrerequisiteError as e:
            return AgentRun(None, False, 0.0, "", infra_error=str(e))
        with ProxyLog() as log:
            try:
                limits = agent.settings.max_steps, agent.settings.request_timeout_s
                with others.recording(log.folder, *limits) as model_url:
                    place = Place(
                        python="python3",
                        repo="/repo",
                        task_file=f"/repo/{task_file}",
                        out_dir="/tmp",  # its own files: the sandbox's /out is root's
                        flint_url=model_url,
                        jeff_url=None,
                        installed=others.home(kind),
                    )
                    launch = agent.launch(place)
                    env = {**launch.env, "PYTHONPATH": place.installed} if place.installed else launch.env
                    stopped = ProxyStopped(log.folder / PROXY_LOG)  # the proxy's step limit was reached
                    run = self._run(
                        workdir, out_dir, visible_tests, launch=Launch(launch.argv, env), how=how, until=stopped
                    )
            except SandboxError as e:
                return AgentRun(None, False, 0.0, "", infra_error=str(e))
            log.keep(out_dir)
        return run

    def _run(
        self,
        workdir: Path,
        out_dir: Path,
        visible_tests: list[str],
        *,
        launch: Launch,
        how: Start,
        until: ProxyStopped | None = None,
    ) -> AgentRun:
        command = launch.argv
        repo = self.repo
        volumes = {str(out_dir): {"bind": "/out", "mode": "rw"}}
        for name in visible_tests:  # mounted read-only over the copy: not writable, not removable
            volumes[str(workdir / name)] = {"bind": f"/repo/{name}", "mode": "ro"}
        environment = {"HOME": "/tmp", **launch.env}
        prepare_trace_folder(out_dir)
        start = time.monotonic()
        state: dict[str, Any] = {}
        try:
            repo.fill(workdir)
            start = time.monotonic()
            code, timed_out, logs = run_container(
                self.client,
                self.config.run_timeout_s,
                state=state,
                until=until,
                image=how.image,
                command=command,
                volumes={**repo.mounts, **volumes},
                user=how.user,
                working_dir=how.working_dir,
                environment=environment,
                network=self.reach.network,
                labels={**self.names.labels("sandbox"), "agentbench.run": self.run_label},
                **{**self._limits(), "cap_add": how.caps},
            )
            wall_s = time.monotonic() - start
            lost = repo.read_back(workdir)
        except SandboxError as e:
            return AgentRun(None, False, time.monotonic() - start, "", infra_error=str(e))
        finally:
            filled = repo.empty()  # whatever happened, the next run finds it empty or new
        exhausted = self._limits_reached(state, filled)
        run = AgentRun(code, timed_out, wall_s, logs, changes_lost=lost, resources_exhausted=exhausted)
        run.killed_for_memory = bool(state.get("OOMKilled")) and code == 137  # the agent itself, PID 1, was killed
        return run

    def _limits_reached(self, state: dict[str, Any], repo_full: bool) -> list[str]:
        """The sandbox limits the run used up: what the model's commands (or the agent) exhausted."""
        reached = []
        if state.get("OOMKilled"):
            reached.append(
                f"a process in the sandbox was killed for memory (sandbox_memory={self.config.sandbox_memory})"
            )
        if repo_full:
            reached.append(f"the repository filled up (sandbox_repo_size={self.config.sandbox_repo_size})")
        return reached


def prepare_trace_folder(out_dir: Path) -> None:
    """/out must be writable by the container's root and by nobody else. As root here, it already is (ours, 0755).
    Otherwise it must be open to all (sticky): the command user, its owner, could then replace the trace, which is
    why the bench reads it only when it belongs to root (read_trace_safely's owner check)."""
    if os.geteuid() == 0:
        os.chown(out_dir, 0, 0)
        out_dir.chmod(0o755)
    else:
        out_dir.chmod(0o1777)
