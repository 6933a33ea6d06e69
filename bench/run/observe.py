"""One agent run observed: a fresh work copy, the servers' caches emptied, the agent in its sandbox while NVML
samples and the server watch probes Flint and Jeff, Flint's /metrics counters before and after; the trace, output and
diff kept in the run's folder."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.errors import FixtureError, ResultsError, ScoringError
from bench.fixtures.workcopy import DiffTooLarge, GitKilled, capture_diff, make_work_copy
from bench.llama.api import PROMPT_TOKENS_COUNTER, counters, erase_slot, wait_idle
from bench.measure.proxy_log import proxy_events, read_exchanges, stop_reason
from bench.measure.request_log import REQUESTS_FILE
from bench.measure.sampler import GpuReading, GpuSampler
from bench.measure.trace import TRACE_FILE, Event, EventTooLarge, load_trace
from bench.results.disk import temp_full
from bench.run.finishing import FINISHING
from bench.run.plan import RunInputs
from bench.run.progress import TraceFollower
from bench.run.server_watch import History, ServerWatch, watched_servers
from bench.sandbox.base import AgentRun, Sandbox
from bench.sandbox.record_proxy import PROXY_LOG
from bench.sandbox.trace_file import TRACE_LIMIT, over_cap, read_trace_safely
from bench.servers.base import Endpoints, Servers
from bench.untrusted import read_untrusted


@dataclass(frozen=True)
class Observed:
    """What one agent run left behind, before scoring."""

    agent: AgentRun
    events: list[Event]
    gpu: GpuReading
    metrics_before: dict[str, float] | None  # Flint's /metrics counters, None when they could not be read
    metrics_after: dict[str, float] | None
    problems: list[str]  # what went wrong around the agent (cache not emptied, diff unreadable, trace damaged)
    graded: bool  # False when the agent's changes could not be read, so there is nothing to grade
    trace_problem: str | None  # why the trace could not be used: the run measured nothing trustworthy (infra_error)
    # Sandbox limits the run used up (memory, repository, trace size), and whether that cut the run short (no stop
    # line, or no usable trace): the agent's failure, resource_exhausted, not the bench's.
    limits_reached: list[str] = field(default_factory=list)
    cut_short_by_limit: bool = False
    servers: list[History] = field(default_factory=list)  # what the server watch saw (bench.run.server_faults)

    @property
    def counter_before(self) -> float | None:
        """Flint's llamacpp:prompt_tokens_total before the run, None when it could not be read."""
        return (self.metrics_before or {}).get(PROMPT_TOKENS_COUNTER)

    @property
    def counter_after(self) -> float | None:
        return (self.metrics_after or {}).get(PROMPT_TOKENS_COUNTER)


def observe(
    inputs: RunInputs,
    sandbox: Sandbox,
    servers: Servers,
    endpoints: Endpoints,
    *,
    run_dir: Path,
    on_event: Callable[[dict[str, Any]], None],
    sample_interval_s: float,
    gpu_uuids: list[str] | None,
    diff_limit: int,
) -> Observed:
    """Run the agent in a fresh copy while sampling GPU memory; keep its trace, output and diff in run_dir."""
    fixture = inputs.planned.fixture
    # ignore_cleanup_errors: a stop landing while a git child still writes into the copy must not be hidden by it
    with tempfile.TemporaryDirectory(prefix="agentbench-run-", ignore_cleanup_errors=True) as tmp:
        workdir, out_dir = Path(tmp) / "repo", Path(tmp) / "out"
        out_dir.mkdir()
        base = make_work_copy(fixture, workdir)
        problems = [note for url in (endpoints.flint_url, endpoints.jeff_url) if url and (note := erase_slot(url))]
        before = counters(endpoints.flint_url)
        agent, gpu, watched = run_watched(
            inputs,
            sandbox,
            endpoints,
            workdir=workdir,
            out_dir=out_dir,
            on_event=on_event,
            sample_interval_s=sample_interval_s,
            gpu_uuids=gpu_uuids,
        )
        after = counter_when_idle(endpoints.flint_url)
        if inputs.agent_command().kind.own_trace or not (out_dir / PROXY_LOG).exists():
            events, trace_problem, trace_limit = keep_trace(out_dir, run_dir, sandbox.trace_owner)
        else:  # another agent: the recording proxy's log is its trace
            events, trace_problem, trace_limit = proxy_trace(out_dir, run_dir, inputs, agent), None, None
        problems += _keep_request_log(out_dir, run_dir, sandbox.trace_owner)
        (run_dir / "agent.log").write_text(agent.output)
        (run_dir / "server.log").write_text(servers.log_tail(50))
        diff, graded = _diff(workdir, base, inputs, problems, limit=diff_limit, lost=agent.changes_lost)
    if graded:  # surrogateescape: a binary file the agent wrote comes back from git as undecodable bytes
        (run_dir / "diff.patch").write_text(diff, errors="surrogateescape")
    limits = [*agent.resources_exhausted, *([trace_limit] if trace_limit else [])]
    cut_short = agent.killed_for_memory or trace_limit is not None
    return Observed(
        agent,
        events,
        gpu,
        metrics_before=before,
        metrics_after=after,
        problems=problems,
        graded=graded,
        trace_problem=trace_problem,
        limits_reached=limits,
        cut_short_by_limit=cut_short,
        servers=watched,
    )


def counter_when_idle(flint_url: str) -> dict[str, float] | None:
    """Flint's counters once it is idle: a request dropped as the agent ended is counted (or not) by then."""
    wait_idle([flint_url])
    return counters(flint_url)


def run_watched(
    inputs: RunInputs,
    sandbox: Sandbox,
    endpoints: Endpoints,
    *,
    workdir: Path,
    out_dir: Path,
    on_event: Callable[[dict[str, Any]], None],
    sample_interval_s: float,
    gpu_uuids: list[str] | None,
) -> tuple[AgentRun, GpuReading, list[History]]:
    """The agent in its sandbox on `workdir` (its trace into `out_dir`), while NVML samples the servers' GPU memory,
    the server watch probes them and the trace's events are followed as they come."""
    fixture = inputs.planned.fixture
    sampler = GpuSampler(endpoints.process_matcher(), device_uuids=gpu_uuids, interval_s=sample_interval_s)
    sampler.baseline()
    watch = ServerWatch(watched_servers(endpoints))
    worker = threading.get_ident()

    def seen(event: dict[str, Any]) -> None:
        if event.get("event") == "stop":  # the run is finished: a stop now waits for its row, and the servers say
            FINISHING.begin(worker)  # how they were at its end (the sandbox still has to end the agent's process)
            watch.agent_stopped()
        on_event(event)

    follower = TraceFollower(out_dir / TRACE_FILE, seen, owner_uid=sandbox.trace_owner)
    watch.start()
    follower.start()
    sampler.start()
    try:
        agent = sandbox.run_agent(
            workdir, out_dir, str(fixture.task_file), fixture.protected_files, agent=inputs.agent_command()
        )
        FINISHING.begin()  # the agent has ended: a stop now waits for the run's row (bench.run.finishing)
    finally:
        follower.stop()  # its last reading may be the first to see the stop line: the watch probes then, not after
        gpu = sampler.stop()
        watched = watch.stop()
    return agent, gpu, watched


def proxy_trace(out_dir: Path, run_dir: Path, inputs: RunInputs, agent: AgentRun) -> list[Event]:
    """The proxy's log kept in run_dir, and the trace made of it (kept as events.jsonl, for the report and viewer)."""
    text = (out_dir / PROXY_LOG).read_text(errors="replace")
    (run_dir / PROXY_LOG).write_text(text)
    exchanges = read_exchanges(text)  # the proxy's step limit, a context 400, or the agent's end says how it stopped
    stop = stop_reason(exchanges, inputs.agent_command().kind.stop_reason(agent.exit_code, agent.timed_out))
    events = proxy_events(exchanges, inputs.planned.ctx, stop)
    (run_dir / TRACE_FILE).write_text("".join(json.dumps(event) + "\n" for event in events))
    return events


def keep_trace(
    out_dir: Path, run_dir: Path, owner_uid: int | None, limit: int = TRACE_LIMIT
) -> tuple[list[Event], str | None, str | None]:
    """The trace, read as a regular file of its writer only (never through a link, a FIFO or a device), kept in
    run_dir: (events, None, None); or no events and why: a problem of the trace, or the agent's letting it (or one
    of its events) grow past the bench's cap, a limit it reached."""
    if not (out_dir / TRACE_FILE).exists() and not (out_dir / TRACE_FILE).is_symlink():
        return [], None, None  # the agent never started: the runner says why
    text, problem = read_trace_safely(out_dir / TRACE_FILE, limit, owner_uid=owner_uid)
    if text is None and over_cap(out_dir / TRACE_FILE, limit):
        return [], None, f"the agent's trace grew past the bench's cap ({problem})"
    if text is None:
        return [], problem, None
    (run_dir / TRACE_FILE).write_text(text)
    try:
        return load_trace(run_dir / TRACE_FILE), None, None
    except EventTooLarge as e:
        return [], None, f"the agent wrote an event past the bench's cap: {e}"
    except ResultsError as e:  # a damaged trace costs this run its figures, never the bench
        return [], f"the event trace is damaged: {e}", None


def _keep_request_log(out_dir: Path, run_dir: Path, owner_uid: int | None) -> list[str]:
    """The agent's request log (agent/requests.py), read as safely as the trace, kept beside it; the problem, if
    any (without the log, reprocessing is not split by cause, and nothing else is lost)."""
    path = out_dir / REQUESTS_FILE
    if not path.exists() and not path.is_symlink():
        return []
    text, problem = read_untrusted(path, TRACE_LIMIT, owner_uid=owner_uid)
    if text is None:
        return [f"the request log was not kept: {problem}"]
    (run_dir / REQUESTS_FILE).write_text(text)
    return []


def _diff(
    workdir: Path, base: str, inputs: RunInputs, problems: list[str], *, limit: int, lost: str | None
) -> tuple[str, bool]:
    """The agent's changes against the fixture itself, so a deleted or doctored .git changes nothing; a diff over
    `limit` bytes is not kept, and the run is not graded (a diff cut short would grade other changes than made).
    `lost`: why the copy is incomplete, so that a diff of it would misstate the agent's work (not graded either)."""
    if lost:
        problems.append(f"{lost}; the run is not graded")
        return "", False
    try:
        return capture_diff(workdir, base, inputs.planned.fixture, max_bytes=limit), True
    except DiffTooLarge as e:
        problems.append(f"{e} (diff_limit): not kept, and the run is not graded")
        return "", False
    except GitKilled as e:  # a stop of the whole job (scancel): the run is not the agent's to fail
        raise ScoringError(f"the agent's changes could not be read: {e}") from e
    except FixtureError as e:
        if full := temp_full():  # git could not write its index: the machine's fault, the run infra_error
            raise ScoringError(f"the agent's changes could not be read: {full}") from e
        problems.append(f"the agent's changes could not be read ({e}); the run is not graded")
        return "", False


def write_run_json(run_dir: Path, inputs: RunInputs, row: dict[str, Any]) -> None:
    """run.json names the fixture (what `bench score` needs to grade the folder again) and how Flint was served (what
    `bench replay` needs to count its prompts again) beside the row's inputs."""
    fixture = inputs.planned.fixture
    names = {"fixture": fixture.name, "fixtures_root": str(fixture.root)}
    served = {"flint_model": inputs.flint_model, "flint_serving": inputs.flint_serving}
    (run_dir / "run.json").write_text(json.dumps({**names, **served, **row}, indent=1))
