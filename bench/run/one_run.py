"""One planned run measured into the record its row is written from: its folder, the agent observed, the trace's
numbers, the servers' verdict, the sandbox's limits (`run_one`); then the grade (`grade_finished`, which needs no
server: bench.run.gradings runs it beside the next run). A failure outside the agent is the run's infra_error; a full
disk, Ctrl-C or SIGTERM ends it with no row and its folder marked cut short."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.errors import BenchError
from bench.llama.gpu_pin import watched_uuids
from bench.measure.speculative import check_drafts
from bench.measure.time_split import ServerSpeeds
from bench.measure.trace_numbers import TraceNumbers, check_reprocessed, trace_numbers
from bench.measure.window_peak import check_peak
from bench.results.disk import DiskError, disk_error, is_disk_error, temp_full
from bench.run.choices import Factory
from bench.run.extras import flint_server, split_reprocessing
from bench.run.grade import grade_run
from bench.run.infra import infra_problems
from bench.run.observe import Observed, observe, write_run_json
from bench.run.outputs import mark_interrupted
from bench.run.plan import RunInputs
from bench.run.progress import Progress
from bench.run.record import RunRecord
from bench.run.server_faults import Verdict, judge
from bench.score.graders import grader_for
from bench.servers.base import Endpoints, Servers
from bench.setting_types import size_bytes


def run_one(
    inputs: RunInputs,
    factory: Factory,
    servers: Servers,
    endpoints: Endpoints,
    *,
    out: Path,
    speeds: ServerSpeeds | None,
    progress: Progress,
) -> RunRecord:
    """The run of `inputs` on `factory`'s sandboxes and these servers, its folder under runs/ beside `out` (the
    results file)."""
    record = RunRecord.start(inputs)
    run_dir = out.parent / "runs" / record.run_id
    with outcome_of(record, run_dir, out):
        run_dir.mkdir(parents=True)
        measure(record, factory, servers, endpoints, run_dir=run_dir, speeds=speeds, progress=progress)
    return record


def grade_finished(record: RunRecord, factory: Factory, out: Path) -> None:
    """The hidden tests of a run `run_one` measured (`record.to_grade`), graded into its record; the grading's
    failures are the run's as the agent's run's are (`outcome_of`)."""
    run_dir = out.parent / "runs" / record.run_id
    with outcome_of(record, run_dir, out):
        grade_into(record, run_dir, factory)


@contextmanager
def outcome_of(record: RunRecord, run_dir: Path, out: Path) -> Iterator[None]:
    """A failure of the sandbox or the servers (BenchError) or a full temporary folder: the run's infra_error, the
    bench goes on; a full disk under the artifacts, Ctrl-C or SIGTERM: no row for this run, its folder marked cut
    short, raised."""
    try:
        yield
    except DiskError:
        mark_interrupted(run_dir)
        raise
    except BenchError as e:  # the sandbox or the servers failed: the run says so, the bench goes on
        record.infra_error = True
        record.note(str(e))
    except OSError as e:  # a full disk under the artifacts: the bench ends, its rows intact
        if is_disk_error(e) and (full := temp_full()):  # the temporary folder's: this run's fault, not the bench's
            record.infra_error = True
            record.note(f"the run could not go on: {full}")
            return
        mark_interrupted(run_dir)
        if not is_disk_error(e):
            raise
        raise disk_error(e, out, run_dir) from None
    except BaseException:  # Ctrl-C, SIGTERM: no row for this run, and its folder says it was cut short
        mark_interrupted(run_dir)
        raise


def measure(
    record: RunRecord,
    factory: Factory,
    servers: Servers,
    endpoints: Endpoints,
    *,
    run_dir: Path,
    speeds: ServerSpeeds | None,
    progress: Progress,
) -> None:
    """The agent observed in its sandbox, then what the run's row says of it, into `record`."""
    config = factory.config
    seen = observe(
        record.inputs,
        factory.sandboxes.sandbox(record.run_id, language=record.inputs.planned.fixture.language),
        servers,
        endpoints,
        run_dir=run_dir,
        on_event=progress.on_event,
        sample_interval_s=config.gpu_sample_interval_s,
        gpu_uuids=watched_uuids(config.gpu_device, factory.server_kind.pins_a_card),
        diff_limit=size_bytes(config.diff_limit),
    )
    numbers, verdict = count_tokens(record, seen, endpoints, run_dir, stall_limit_s=config.server_stall_limit_s)
    record.speeds = speeds
    for problem in [*seen.problems, *numbers.problems, *seen.limits_reached]:
        record.note(problem)
    record.limits_reached, record.resource_exhausted = seen.limits_reached, seen.cut_short_by_limit
    if seen.trace_problem:  # the trace cannot be trusted: nothing it says goes in the row
        record.note(seen.trace_problem)
        record.infra_error = True
    infra_problems(
        record, seen.agent, verdict, servers, way_ok=factory.sandboxes.healthy(), run_timeout_s=config.run_timeout_s
    )
    if numbers.start_n_ctx not in (None, endpoints.ctx):
        record.note(f"the agent saw a {numbers.start_n_ctx}-token window, not the row's {endpoints.ctx}")
        record.infra_error = True
    write_run_json(run_dir, record.inputs, {"run_id": record.run_id, **flint_server(endpoints, run_dir)})
    record.to_grade = seen.graded  # otherwise nothing to grade: the counts stay empty, not 0 (grade_finished)


def count_tokens(
    record: RunRecord, seen: Observed, endpoints: Endpoints, run_dir: Path, *, stall_limit_s: float
) -> tuple[TraceNumbers, Verdict]:
    """The trace's figures into `record`, each checked against Flint's own counters; the servers' verdict on the run."""
    record.events, record.wall_s, record.gpu = seen.events, seen.agent.wall_s, seen.gpu
    numbers = trace_numbers(seen.events, endpoints.ctx, endpoints.jeff.n_ctx if endpoints.jeff else None)
    record.numbers, record.check = numbers, check_reprocessed(numbers, seen.counter_before, seen.counter_after)
    verdict = judge(seen.servers, seen.events, stall_limit_s)
    record.server_stall_s, record.check = verdict.stall_s, verdict.reprocessed(record.check)
    record.drafts = check_drafts(numbers, seen.metrics_before, seen.metrics_after, verdict.flint_restarted)
    record.peak = check_peak(numbers, seen.metrics_before, seen.metrics_after, verdict.flint_restarted)
    if seen.events:
        record.attribution = split_reprocessing(run_dir, seen.events, endpoints.flint_url)
    return numbers, verdict


def grade_into(record: RunRecord, run_dir: Path, factory: Factory) -> None:
    """The run's hidden tests, graded after the agent has ended; a grading the infrastructure cut short is noted."""
    record.score, not_graded = grade_run(run_dir, grader_for(factory.sandboxes.engine), factory.checkout)
    if not_graded:  # the infrastructure's fault, not the agent's: --resume runs it again
        record.note(not_graded)
        record.infra_error = True
