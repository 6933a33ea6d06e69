"""`python -m bench run`: for each (fixture, preset, ctx, rep), one agent run in a fresh sandbox, one results row.

A row is appended the moment its run ends. A failure outside the agent (a server that died, a container that did
not start) is recorded as `infra_error` with the reason, and the bench goes on with the next run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agent.trace import agent_version
from bench import ROOT
from bench.config import BenchConfig, load_config
from bench.containers.engine import docker_available, docker_client, remove_leftovers
from bench.containers.images import ensure_sandbox_image
from bench.errors import BenchError, ConfigError, FixtureError, ResultsError, ServerStartError
from bench.measure.labels import failure_labels
from bench.measure.nvml import nvidia_gpu_present
from bench.measure.roles import ContainerMatcher, PidMatcher, ProcessMatcher
from bench.measure.sampler import GpuReading, GpuSampler
from bench.measure.trace import Event, run_events
from bench.measure.trace_numbers import reprocessed_mismatch, trace_metrics
from bench.results.append import append_row, check_same_inputs, read_rows
from bench.results.schema import INFRA_STOP_REASON, run_key
from bench.run.progress import Progress, TraceFollower, summary_table
from bench.run.provenance import file_sha256, git_dirty, git_sha
from bench.sandbox.base import AgentRun, Sandbox
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.local import LocalSandbox
from bench.score.fixtures import Fixture, fixture_hash, load_fixture
from bench.score.grading import score_run_dir
from bench.score.workcopy import capture_diff, make_work_copy
from bench.servers.api import PROMPT_TOKENS_COUNTER, erase_slot, read_metrics
from bench.servers.base import Endpoints, Servers
from bench.servers.compose import ComposeServers
from bench.servers.cpu_image import ensure_llama_cpu_image
from bench.servers.embedded import EmbeddedServers
from bench.servers.external import ExternalServers


@dataclass(frozen=True)
class Observed:
    """What one agent run left behind, before scoring."""

    agent: AgentRun
    gpu: GpuReading
    prompt_counter_delta: float | None  # change of Flint's llamacpp:prompt_tokens_total over the run
    diff_error: str | None
    cache_notes: list[str]  # why a server's prompt cache could not be emptied before the run


@dataclass(frozen=True)
class PlannedRun:
    fixture: Fixture
    preset: str
    ctx: int
    rep: int


def command(args: argparse.Namespace) -> int:
    config_path = Path(args.config)
    if not config_path.exists() and args.config != "bench.yaml":
        raise ConfigError(f"config file {args.config} not found")
    overrides = {
        "ctx": args.ctx, "presets": args.presets, "fixtures": args.fixtures, "reps": args.reps,
        "max_steps": args.max_steps, "sandbox": args.sandbox, "servers": args.servers, "out": args.out,
        "resume": args.resume or None, "flint_url": args.flint_url, "jeff_url": args.jeff_url,
    }  # fmt: skip
    config = load_config(config_path if config_path.exists() else None, overrides)
    signal.signal(signal.SIGTERM, _interrupt)  # a CI timeout or `kill` stops servers and keeps rows, like Ctrl-C
    rows = Bench(config).run()
    return 0 if rows is not None else 1


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Bench:
    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.out = Path(config.out) if config.out else default_out()
        self.sandbox_kind = config.sandbox
        if self.sandbox_kind == "auto":
            self.sandbox_kind = "docker" if docker_available() else "local"
        self.docker: Any = docker_client() if self.sandbox_kind == "docker" else None
        self.server_kind = config.servers
        if self.server_kind == "auto":
            engine = self.docker is not None or docker_available()
            self.server_kind = "compose" if engine and nvidia_gpu_present() else "embedded"
        self.sandbox_image = ""
        self.rows: list[dict[str, str]] = []
        # What does not change during a bench is read once, not per run.
        self.provenance = {
            "agent_version": agent_version(),
            "git_sha": git_sha(),
            "git_dirty": str(git_dirty()).lower(),
        }
        self.fixture_shas: dict[str, str] = {}

    def plan(self) -> list[PlannedRun]:
        fixtures = {name: load_fixture(name) for name in {f for f, _, _ in self.config.matrix()}}
        self.fixture_shas = {name: fixture_hash(fixture) for name, fixture in fixtures.items()}
        runs = [
            PlannedRun(fixtures[name], preset, ctx, rep)
            for name, preset, ctx in self.config.matrix()
            for rep in range(1, self.config.reps + 1)
        ]
        return sorted(runs, key=lambda run: run.ctx)  # stable: one server start per context size

    def make_servers(self) -> Servers:
        log_dir = self.out.parent / "runs" / "servers"
        if self.server_kind == "embedded":
            return EmbeddedServers(self.config, log_dir, self.docker, self.sandbox_image)
        if self.server_kind == "external":
            return ExternalServers(self.config, self.docker, self.sandbox_image)
        client = self.docker if self.docker is not None else docker_client()
        gpu = nvidia_gpu_present()
        return ComposeServers(self.config, gpu=gpu, cpu_image="" if gpu else ensure_llama_cpu_image(client))

    def run(self) -> list[dict[str, str]]:
        plan = self.plan()
        existing = read_rows(self.out)
        if existing and not self.config.resume:
            raise ResultsError(f"{self.out} already holds {len(existing)} rows: pass --resume to continue it, or --out")
        if self.docker is not None:
            removed = remove_leftovers(self.docker)
            if removed:
                print(f"removed {removed} container(s) left by an earlier bench")
            self.sandbox_image = ensure_sandbox_image(self.docker)
        servers = self.make_servers()
        progress = Progress(len(plan))
        print(f"bench: {len(plan)} runs -> {self.out} (sandbox {self.sandbox_kind}, servers {self.server_kind})")
        try:
            self._run_plan(plan, servers, existing, progress)
        finally:
            servers.stop()
        if self.rows:
            print(summary_table(self.rows))
        return self.rows

    def _run_plan(
        self, plan: list[PlannedRun], servers: Servers, existing: list[dict[str, str]], progress: Progress
    ) -> None:
        done_keys = {run_key(row) for row in existing}
        endpoints: Endpoints | None = None
        serving_ctx = 0
        for index, planned in enumerate(plan, start=1):
            # (Re)start at each new ctx, and after a server died in the previous run.
            if endpoints is None or serving_ctx != planned.ctx or not servers.healthy():
                try:
                    endpoints, serving_ctx = servers.start(planned.ctx), planned.ctx
                except ServerStartError as e:
                    if endpoints is None:  # nothing measured yet: the set-up is wrong, say so and stop
                        raise
                    self._record(self.infra_row(planned, self.inputs(planned, endpoints), str(e)), progress)
                    serving_ctx = 0  # try again for the next run
                    continue
            inputs = self.inputs(planned, endpoints)
            if existing:
                check_same_inputs(self.out, existing, inputs)
            if run_key(inputs) in done_keys:
                print(f"run {index}/{len(plan)} already in {self.out.name}: skipped (--resume)")
                continue
            progress.run_started(index, planned.fixture.name, planned.preset, planned.ctx, planned.rep)
            self._record(self.run_one(planned, servers, endpoints, inputs, progress), progress)

    def _record(self, row: dict[str, str], progress: Progress) -> None:
        append_row(self.out, row)
        self.rows.append(row)
        progress.run_finished(row)

    def infra_row(self, planned: PlannedRun, inputs: dict[str, str], error: str) -> dict[str, str]:
        """The row of a run that could not start because its servers could not be (re)started."""
        started = datetime.now(timezone.utc)
        row = dict(inputs, run_id=self.run_id(planned, started), started_at=started.isoformat(timespec="seconds"))
        row.update(stop_reason=INFRA_STOP_REASON, error=error, failure_labels="infrastructure")
        return row

    def run_id(self, planned: PlannedRun, started: datetime) -> str:
        stamp = f"{started:%Y%m%dT%H%M%S}"
        return f"{stamp}-{planned.fixture.name}-{planned.preset}-{planned.ctx}-r{planned.rep}-{uuid.uuid4().hex[:4]}"

    def inputs(self, planned: PlannedRun, endpoints: Endpoints) -> dict[str, str]:
        """The values that define a run (INPUT_COLUMNS) plus the rest of its provenance."""
        max_steps = self.config.max_steps or planned.fixture.max_steps
        return {
            "fixture": planned.fixture.name,
            "fixture_sha": self.fixture_shas[planned.fixture.name],
            "preset": planned.preset,
            "ctx": str(planned.ctx),
            "rep": str(planned.rep),
            "flint_model": endpoints.flint_model,
            "jeff_model": endpoints.jeff_model,
            "flint_model_sha256": file_sha256(endpoints.flint_model_path) if endpoints.flint_model_path else "",
            "jeff_model_sha256": file_sha256(endpoints.jeff_model_path) if endpoints.jeff_model_path else "",
            "agent_version": self.provenance["agent_version"],
            "sampling": json.dumps(self.config.sampling, sort_keys=True),
            "max_steps": str(max_steps),
            "keep": str(self.config.keep),
            "clear_at": str(self.config.clear_at),
            "server_build": endpoints.server_build,
            "sandbox": self.sandbox_kind,
            "servers": self.server_kind,
            "git_sha": self.provenance["git_sha"],
            "git_dirty": self.provenance["git_dirty"],
        }

    def agent_args(self, planned: PlannedRun, inputs: dict[str, str]) -> list[str]:
        return [
            "--preset", planned.preset, "--max-steps", inputs["max_steps"], "--keep", inputs["keep"],
            "--clear-at", inputs["clear_at"], "--approve", "yes", "--sampling", inputs["sampling"],
            "--retries", str(self.config.agent_retries), "--retry-delay", str(self.config.agent_retry_delay_s),
        ]  # fmt: skip

    def make_sandbox(self, endpoints: Endpoints, run_id: str) -> Sandbox:
        if self.sandbox_kind == "docker":
            return DockerSandbox(self.docker, self.sandbox_image, endpoints, self.config, run_id)
        return LocalSandbox(endpoints, self.config.run_timeout_s)

    def run_one(
        self, planned: PlannedRun, servers: Servers, endpoints: Endpoints, inputs: dict[str, str], progress: Progress
    ) -> dict[str, str]:
        started = datetime.now(timezone.utc)
        run_id = self.run_id(planned, started)
        run_dir = self.out.parent / "runs" / run_id
        run_dir.mkdir(parents=True)
        row = dict(inputs, run_id=run_id, started_at=started.isoformat(timespec="seconds"))
        errors: list[str] = []
        try:
            self._measure(planned, servers, endpoints, run_dir, row, errors, progress)
        except BenchError as e:  # the sandbox or the servers failed: the run says so, the bench goes on
            errors.append(str(e))
            row["stop_reason"] = INFRA_STOP_REASON
        events = run_events(run_dir)
        row["failure_labels"] = ";".join(failure_labels(events, row))
        row["error"] = " | ".join(dict.fromkeys(e for e in errors if e))
        return row

    def _measure(
        self, planned: PlannedRun, servers: Servers, endpoints: Endpoints, run_dir: Path, row: dict[str, str],
        errors: list[str], progress: Progress,
    ) -> None:  # fmt: skip
        sandbox = self.make_sandbox(endpoints, row["run_id"])
        observed = self._observe_agent(planned, sandbox, servers, endpoints, run_dir, row, progress)
        events = run_events(run_dir)
        row.update(trace_metrics(events, observed.agent.wall_s))
        row.update(observed.gpu.as_row())
        delta = observed.prompt_counter_delta
        row["prompt_tokens_metrics"] = "" if delta is None else str(int(delta))
        errors.append(reprocessed_mismatch(events, row["prompt_tokens_reprocessed"], delta) or "")
        errors.extend(observed.cache_notes)
        errors.extend(self._infra_problems(observed.agent, events, servers, row))
        if observed.diff_error:
            errors.append(observed.diff_error)  # nothing to grade: the counts stay empty, not 0
            return
        score = score_run_dir(run_dir, sandbox.grader())
        row.update(score.as_row())
        errors.append(score.error or "")

    def _observe_agent(
        self, planned: PlannedRun, sandbox: Sandbox, servers: Servers, endpoints: Endpoints, run_dir: Path,
        row: dict[str, str], progress: Progress,
    ) -> Observed:  # fmt: skip
        """Run the agent in a fresh copy while sampling GPU memory; keep its trace, output and diff in run_dir."""
        with tempfile.TemporaryDirectory(prefix="agentbench-run-") as tmp:
            workdir, out_dir = Path(tmp) / "repo", Path(tmp) / "out"
            out_dir.mkdir()
            base = make_work_copy(planned.fixture, workdir)
            cache_notes = [erase_slot(url) for url in (endpoints.flint_url, endpoints.jeff_url) if url]
            before = _prompt_counter(endpoints.flint_url)
            sampler = self.sampler(endpoints)
            sampler.baseline()
            follower = TraceFollower(out_dir / "events.jsonl", progress.on_event)
            follower.start()
            sampler.start()
            try:
                agent = sandbox.run_agent(
                    workdir, out_dir, str(planned.fixture.task_file), planned.fixture.visible_tests,
                    self.agent_args(planned, row),
                )  # fmt: skip
            finally:
                gpu = sampler.stop()
                follower.stop()
            after = _prompt_counter(endpoints.flint_url)
            self._save_artifacts(out_dir, run_dir, agent.output, servers)
            diff, diff_error = _diff(workdir, base)
        # surrogateescape: a binary file the agent wrote comes back from git as undecodable bytes
        (run_dir / "diff.patch").write_text(diff, errors="surrogateescape")
        (run_dir / "run.json").write_text(json.dumps({"fixture": planned.fixture.name, "base": base, **row}, indent=1))
        delta = None if before is None or after is None else after - before
        return Observed(agent, gpu, delta, diff_error, [note for note in cache_notes if note])

    def _infra_problems(
        self, result: AgentRun, events: list[Event], servers: Servers, row: dict[str, str]
    ) -> list[str]:
        """Reasons this run failed for something other than the agent; any of them marks the row infra_error."""
        problems = []
        if result.infra_error:
            problems.append(result.infra_error)
        if result.timed_out:
            problems.append(f"the run was killed after run_timeout_s={self.config.run_timeout_s:.0f}")
        if not servers.healthy():
            problems.append(f"a llama-server died during the run; log tail: {servers.log_tail(5)!r}")
        elif not any(e.get("event") == "stop" for e in events) and not problems:
            problems.append(f"the agent exited with status {result.exit_code} without a stop event: see agent.log")
        if problems:
            row["stop_reason"] = INFRA_STOP_REASON
        return problems

    def sampler(self, endpoints: Endpoints) -> GpuSampler:
        matcher: ProcessMatcher
        if endpoints.server_containers:
            matcher = ContainerMatcher(endpoints.server_containers)
        else:
            matcher = PidMatcher(endpoints.server_pids or {})
        uuids = [self.config.gpu_device] if self.config.gpu_device.startswith("GPU-") else None
        return GpuSampler(matcher, device_uuids=uuids, interval_s=self.config.gpu_sample_interval_s)

    def _save_artifacts(self, out_dir: Path, run_dir: Path, output: str, servers: Servers) -> None:
        if (out_dir / "events.jsonl").exists():
            shutil.copyfile(out_dir / "events.jsonl", run_dir / "events.jsonl")
        (run_dir / "agent.log").write_text(output)
        (run_dir / "server.log").write_text(servers.log_tail(50))


def _diff(workdir: Path, base: str) -> tuple[str, str | None]:
    try:
        return capture_diff(workdir, base), None
    except FixtureError as e:  # e.g. the agent deleted .git: its changes cannot be told apart, so none are graded
        return "", f"the agent's changes could not be read ({e}); the run is not graded"


def _prompt_counter(url: str) -> float | None:
    try:
        return read_metrics(url).get(PROMPT_TOKENS_COUNTER)
    except (OSError, ValueError, BenchError):
        return None


def default_out() -> Path:
    sha = git_sha()[:7] or "nogit"
    return ROOT / "results" / f"{datetime.now():%Y%m%d-%H%M%S}-{sha}.csv"
