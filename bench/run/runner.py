"""`python -m bench run`: for each (fixture, preset, ctx, rep), one agent run in a fresh sandbox, one results row.

With `workers: N` or `gpu_devices`, N such benches (one pair of servers each, its own instance) take runs from one
queue and hand their rows to one writer (bench.run.workers); with `--shard I/N`, the plan is one shard of it
(bench.run.shards).

A row is appended the moment its run ends. A failure outside the agent (a server that died, a container that did
not start) is recorded as `infra_error` with the reason, and the bench goes on with the next run. One bench at a
time writes a results file (bench.results.lock); each bench is an instance with names and a record of its own, and
removes what killed ones left (bench.run.instance).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from bench import stopping
from bench.config import BenchConfig
from bench.errors import SandboxError, ServerPlacementError, ServerStartError
from bench.llama.api import wait_idle
from bench.llama.pin import package_build
from bench.logs import logging_to
from bench.measure.time_split import ServerSpeeds
from bench.provenance import git_dirty, git_sha
from bench.results.append import check_same_inputs, completed_keys, read_rows
from bench.results.lock import ResultsLock
from bench.run.agents_model import settings_as_run
from bench.run.choices import Factory
from bench.run.ending import ending
from bench.run.extras import prepare_servers
from bench.run.finishing import FINISHING
from bench.run.gradings import Finished, Gradings
from bench.run.one_run import grade_finished, run_one
from bench.run.outputs import check_writable, log_file, mark_interrupted
from bench.run.plan import PlannedRun, Provenance, RunInputs, jeff_window, plan_runs
from bench.run.preflight import refuse_small_windows, refuse_uncollectable
from bench.run.progress import Progress
from bench.run.record import RunRecord
from bench.run.resume_file import results_file, rows_to_continue
from bench.run.server_return import RERUNS, Outages
from bench.run.shards import Shard, describe, planned_id, shard_out, shard_plan
from bench.run.start_notes import start_warnings
from bench.run.workers import Lanes, RowWriter, RunQueue, stop_servers, worker_configs, worker_label
from bench.score.graders import grader_for
from bench.servers.base import Endpoints, Servers

Row = dict[str, str]
log = logging.getLogger(__name__)


class Bench:
    """One bench: the plan (or one shard of it) on one pair of servers, or on several (`factories`: one per worker,
    e.g. made by a test; else built here from `worker_configs`, CPU workers cut to the cores free)."""

    def __init__(
        self,
        config: BenchConfig,
        factory: Factory | None = None,
        *,
        factories: Sequence[Factory] = (),
        checkout: Path,
    ) -> None:
        # `checkout`: this repository, whose commit the rows record, whose results/ a new file goes to, whose
        # fixtures are the default
        self.checkout = checkout
        self.settings, self.start_notes = (config, []) if factories or factory else settings_as_run(config)
        self.shard = Shard.parse(config.shard) if config.shard else None
        self.out = shard_out(results_file(config, checkout), self.shard)  # --resume alone: the newest of its matrix
        check_writable(self.out)
        self.factories = list(factories) or (
            [factory] if factory else Factory.for_configs(worker_configs(self.settings), checkout)
        )
        self.factory = self.factories[0]
        self.config = self.factory.config  # the first worker's: its card, its share of the cores
        self.worker_label = worker_label(self.config, config, 1)
        self.choice = (self.factory.sandbox.kind, self.factory.servers.kind)
        # host servers of the installed package: its build, for the comparison key (bench.llama.pin.package_build)
        self.server_package = package_build() if self.factory.server_kind.package_build else ""
        self.provenance = Provenance(git_sha(checkout), git_dirty(checkout))  # read once, not per run
        self.writer = RowWriter(self.out)
        self.rows: list[Row] = self.writer.rows
        self.current_ctx: int | None = None  # the window this bench's servers serve now (the queue prefers it)
        self.speeds: ServerSpeeds | None = None  # measured at each server start, for the runs' floor
        self.outages = Outages(self.factory.server_kind, config.server_wait_s, config.jeff_ctx)
        self.plan: list[PlannedRun] = []
        self.windows_checked = False  # the plan's windows against Flint's count of each task (bench.run.preflight)

    def lane(self, factory: Factory) -> Bench:
        """Another worker of this bench: its own settings, sandboxes and servers; the same plan, file and writer."""
        other = copy.copy(self)
        other.factory, other.config, other.current_ctx = factory, factory.config, None
        other.worker_label = worker_label(factory.config, self.settings, self.factories.index(factory) + 1)
        return other

    def run(self) -> list[Row]:
        """The whole plan, holding the results file's lock, as instances (one per worker) that clean up after
        themselves."""
        # a wrong matrix is refused before anything is locked
        plan = shard_plan(plan_runs(self.config, self.checkout, self.factory.serving()), self.shard)
        self.plan = plan  # before the lanes copy this bench: each checks the windows at its servers' first start
        lanes = Lanes(self, self.factories)
        lock = ResultsLock(self.out)
        lock.acquire()
        try:
            with logging_to(log_file(self.out)):
                for line in lanes.start(self.out):
                    log.info("%s", line)
                with lanes.temp_files():
                    return self._run_instance(plan, lanes)
        finally:
            lanes.close()
            lock.release()

    def _run_instance(self, plan: list[PlannedRun], lanes: Lanes) -> list[Row]:
        existing = rows_to_continue(self.out, self.config.resume)
        sandbox, kind = self.factory.sandbox, self.factory.servers
        shard = f" (shard {self.shard})" if self.shard else ""
        log.info("%d runs%s -> %s (log: %s)", len(plan), shard, self.out, log_file(self.out))
        log.info("sandbox %s (%s), servers %s (%s)", sandbox.kind, sandbox.reason, kind.kind, kind.reason)
        for note in start_warnings(self.config, sandbox) + self.start_notes:
            log.warning("%s", note)
        if not plan:  # a shard of a plan smaller than the shard count: its file says so, and merges
            self.writer.header()
        refuse_uncollectable(plan, grader_for(self.factory.sandboxes.engine))
        if plan:  # what the workers' servers share (an image, the models): made once, before any of them starts
            self.factory.prepare_shared()
        queue = RunQueue(plan)
        if len(lanes.benches) == 1:  # one pair: it runs here, where Ctrl-C lands
            self.run_lane(queue, lanes.servers(self, plan), existing, Progress(len(plan)))
        else:
            lanes.run(queue, plan, existing)
        if said := ending(read_rows(self.out), self.out, len(self.rows)):
            print(said, flush=True)
        return self.rows

    def run_lane(self, queue: RunQueue, servers: Servers, existing: list[Row], progress: Progress) -> None:
        """Runs from `queue` on this bench's servers until all are run and graded; then the servers stop."""
        write = partial(self._write, progress=progress)
        self.gradings = Gradings(write, self.out.parent / "runs", overlap=self.config.grading_overlap)
        try:
            try:
                self._run_plan(queue, servers, existing, progress)
            except BaseException:
                self.gradings.drain(stopped=True)
                raise
            self.gradings.drain(stopped=False)
        finally:
            stop_servers(servers)

    def _run_plan(self, queue: RunQueue, servers: Servers, existing: list[Row], progress: Progress) -> None:
        done = completed_keys(existing)
        endpoints: Endpoints | None = None
        for index, planned in queue.runs(self):
            try:
                ready = self._servers_for(planned, servers, endpoints, progress)
            except ServerPlacementError as e:  # its run's row says so; a restart would come up the same way
                log.error("%s: the bench stops here (--resume runs the rest once that is fixed)", e)
                return
            if ready is None:  # they could not be started again: the run's infra_error row says why
                continue
            endpoints = ready
            inputs = self._inputs(planned, endpoints, servers)
            if existing:
                check_same_inputs(self.out, existing, inputs.cells())
            if inputs.key() in done:
                progress.run_skipped(index, self.out.name)
                continue
            stopping.check()  # a stop asked of this worker while its servers started: no run begins
            progress.run_started(index, planned.fixture.name, planned.label, planned.ctx, rep=planned.rep)
            endpoints = self._run_planned(planned, servers, endpoints, progress)

    def _servers_for(
        self, planned: PlannedRun, servers: Servers, endpoints: Endpoints | None, progress: Progress
    ) -> Endpoints | None:
        """Idle servers for `planned`: those up (waited for when they stopped answering: bench.run.server_return),
        else (re)started at a new ctx, after a death, or when a slot is still busy after the last run; None when a
        restart failed."""
        if endpoints is not None:
            endpoints = self.outages.before_run(endpoints, servers.healthy(), describe(planned_id(planned)))
        stuck = wait_idle(endpoints.urls) if endpoints is not None else None
        jeff_ctx = jeff_window(planned.preset, planned.ctx, self.config)
        same = endpoints is not None and endpoints.ctx == planned.ctx and endpoints.jeff_ctx in (None, jeff_ctx)
        if endpoints is not None and same and self._reachable(servers) and not stuck:
            return endpoints
        try:
            return self._start_servers(servers, planned, progress)
        except ServerPlacementError:
            raise
        except (ServerStartError, SandboxError) as e:
            if endpoints is None:  # nothing measured yet: the set-up is wrong, say so and stop
                raise
            self._record_not_started(self._inputs(planned, endpoints, servers), str(e), progress)
            return None

    def _record_not_started(self, inputs: RunInputs, error: str, progress: Progress) -> None:
        record = RunRecord.start(inputs)  # a run that could not start
        record.infra_error = True
        record.note(error)
        self._record(record, progress)

    def _start_servers(self, servers: Servers, planned: PlannedRun, progress: Progress) -> Endpoints:
        jeff_ctx = jeff_window(planned.preset, planned.ctx, self.config)  # the preset's (bench.run.plan)
        started = servers.start(planned.ctx, jeff_ctx)
        if not self.windows_checked:  # before the first run: a window no task fits is refused
            refuse_small_windows(self.plan, started.flint_url)
            self.windows_checked = True
        self.factory.sandboxes.connect(started)  # the sandboxes' way to these servers
        try:  # on a GPU: each on its card, warmed up; then the speeds the runs' floor comes from
            # waited for in slices (bench.stopping): a first warm-up on a GPU can take minutes
            self.speeds = stopping.wait_call(
                lambda: prepare_servers(servers, started, self.config.gpu_device, jeff_ctx or self.config.jeff_ctx)
            )
        except ServerPlacementError as e:
            self._record_not_started(self._inputs(planned, started, servers), str(e), progress)
            raise
        self.current_ctx = started.ctx
        log.debug("servers up for ctx %d: flint %s, jeff %s", started.ctx, started.flint_url, started.jeff_url)
        if stuck := wait_idle(started.urls):
            raise ServerStartError(f"the servers are not idle after a restart: {stuck}")
        return started

    def _run_planned(
        self, planned: PlannedRun, servers: Servers, endpoints: Endpoints, progress: Progress
    ) -> Endpoints | None:
        """One planned run and its row. An outage that cut it short costs only the attempt when the servers come
        back within server_wait_s: it runs again (bench.run.server_return). None: the servers must be restarted."""
        lost: list[str] = []  # the attempts an outage cut short, for the row of the one that counts
        for attempt in range(RERUNS + 1):
            with FINISHING.row():  # a SIGTERM after the agent ended waits for the row (bench.run.finishing)
                inputs = self._inputs(planned, endpoints, servers)
                record = run_one(
                    inputs, self.factory, servers, endpoints, out=self.out, speeds=self.speeds, progress=progress
                )
                for note in lost:
                    record.note(note)
                then = self.outages.after(record.outage, record.infra_error, last=attempt == RERUNS)
                if then == "final":
                    self._record(record, progress)
            if then == "final":
                return endpoints
            if then == "restart":
                mark_interrupted(self.out.parent / "runs" / record.run_id)
                if (fresh := self._servers_for(planned, servers, endpoints, progress)) is None:
                    return None  # could not start them: the planned run's row says so
                endpoints = fresh
                lost.append(self.outages.rerun_note(record.run_id, record.outage, None))
                continue
            back = self.outages.wait(endpoints, f"run {record.run_id} was cut short: {record.outage}")
            if back is None:
                with FINISHING.row():
                    record.note(self.outages.gave_up_note())
                    self._record(record, progress)
                self.outages.give_up(record.outage)
                return None
            mark_interrupted(self.out.parent / "runs" / record.run_id)
            endpoints, seconds = back
            lost.append(self.outages.rerun_note(record.run_id, record.outage, seconds))
        return endpoints

    def _inputs(self, planned: PlannedRun, endpoints: Endpoints, servers: Servers) -> RunInputs:
        return RunInputs.of(
            planned,
            self.config,
            endpoints,
            self.choice,
            provenance=self.provenance,
            build_pin=servers.build_pin,
            server_package=self.server_package,
        )

    def _record(self, record: RunRecord, progress: Progress) -> None:
        """Its row, once graded (bench.run.gradings), in run order."""
        grade = (lambda graded: grade_finished(graded, self.factory, self.out)) if record.to_grade else None
        self.gradings.submit(Finished(record, progress.names(), grade))

    def _write(self, record: RunRecord, names: tuple[str, str], progress: Progress) -> None:
        row = record.row().cells()
        self.writer.append(row)
        log.debug("row of %s: %s", row["run_id"], {column: text for column, text in row.items() if text})
        progress.run_finished(row, names)

    def _reachable(self, servers: Servers) -> bool:
        """The servers answer, and so does the sandboxes' way to them (the forwarder, where there is one)."""
        return servers.healthy() and self.factory.sandboxes.healthy()
