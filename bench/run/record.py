"""A run's results row, put together from its typed parts: inputs, trace numbers, the /metrics cross-check, GPU
memory, the grade and the failure labels. Values stay typed here; they become text once, when the row is written.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from bench.agents.article import PRESETS
from bench.llama.pin import build_mismatch
from bench.measure.labels import Outcome, failure_labels
from bench.measure.reprocessing import Attribution
from bench.measure.request_figures import request_figures
from bench.measure.sampler import GpuReading
from bench.measure.speculative import DraftCheck
from bench.measure.summaries import jeff_first_figures, jeff_window, summary_figures
from bench.measure.time_split import ServerSpeeds, fill_time_split
from bench.measure.tool_time import tools_seconds
from bench.measure.trace import Event
from bench.measure.trace_numbers import ReprocessedCheck, TraceNumbers, cached_mismatch
from bench.measure.window_peak import WindowPeak
from bench.results.row import ResultRow
from bench.results.schema import INFRA_STOP_REASON, RESOURCE_STOP_REASON
from bench.run.plan import RunInputs
from bench.score.grading import Score


@dataclass
class RunRecord:
    """One run as it is measured; `row()` lays it out in the results columns."""

    inputs: RunInputs
    run_id: str
    started_at: str
    events: list[Event] = field(default_factory=list)
    wall_s: float | None = None
    numbers: TraceNumbers | None = None
    check: ReprocessedCheck | None = None
    drafts: DraftCheck | None = None  # drafted and accepted tokens against /metrics (bench/measure/speculative.py)
    peak: WindowPeak | None = None  # the window's high-water mark as /metrics says it (bench/measure/window_peak.py)
    gpu: GpuReading | None = None
    score: Score | None = None
    attribution: Attribution | None = None  # reprocessed tokens by cause (bench/measure/reprocessing.py)
    speeds: ServerSpeeds | None = None  # the servers' measured speeds, for the floor
    infra_error: bool = False  # the run failed for a reason outside the agent
    server_stall_s: float | None = None  # time lost to servers not computing (bench.measure.stall)
    resource_exhausted: bool = False  # the agent's run used up a sandbox limit and was cut short by it
    limits_reached: list[str] = field(default_factory=list)  # sandbox limits the run used up, cut short or not
    errors: list[str] = field(default_factory=list)
    outage: str = ""  # a server stopped answering during the run: the fault that says so (bench.run.infra)
    to_grade: bool = False  # the agent's changes were read back: its hidden tests are graded (one_run.grade_finished)

    @classmethod
    def start(cls, inputs: RunInputs) -> RunRecord:
        """A new run of `inputs`: its id (when, what, and 4 hex digits) and start time."""
        started = datetime.now(timezone.utc)
        planned = inputs.planned
        run_id = f"{started:%Y%m%dT%H%M%S}-{planned.fixture.name}-{planned.label}-{planned.ctx}-r{planned.rep}"
        return cls(inputs, f"{run_id}-{uuid.uuid4().hex[:4]}", started.isoformat(timespec="seconds"))

    def note(self, problem: str | None) -> None:
        if problem and problem not in self.errors:
            self.errors.append(problem)

    @property
    def stop_reason(self) -> str | None:
        if self.infra_error:
            return INFRA_STOP_REASON
        if self.resource_exhausted:
            return RESOURCE_STOP_REASON
        return self.numbers.stop_reason if self.numbers else None

    def labels(self) -> list[str]:
        score = self.score
        outcome = Outcome(
            stop_reason=self.stop_reason,
            files_changed=score.files_changed if score else None,
            hidden_passed=score.hidden_passed if score else None,
            hidden_total=score.hidden_total if score else None,
            grading_tampered=bool(score and getattr(score, "grading_tampered", False)),
            resource_exhausted=self.resource_exhausted or bool(self.limits_reached),
        )
        return failure_labels(self.events, outcome)

    def harness_s(self) -> float | None:
        """wall_s - model_s - server_stall_s, unclamped: a negative value is a finding (server time beyond the wall),
        noted. Time a stalled server lost is the server's, not the harness's."""
        model_s = self.numbers.model_s if self.numbers else None
        if self.wall_s is None or model_s is None:
            return None
        harness = round(self.wall_s - model_s - (self.server_stall_s or 0.0), 3)
        if harness < 0:
            self.note(
                f"server timings ({model_s} s) exceed the run's wall time ({self.wall_s} s): the servers counted "
                "work outside the run (a request still running when the agent gave up on it, or a clock step)"
            )
        return harness

    def row(self) -> ResultRow:
        row = ResultRow(run_id=self.run_id, started_at=self.started_at)
        self.inputs.fill(row)
        self.note(build_mismatch(self.inputs.server_build, self.inputs.server_build_pin))
        row.wall_s = None if self.wall_s is None else round(self.wall_s, 2)
        row.harness_s = self.harness_s()
        row.tools_s = tools_seconds(self.events) if self.events else None
        row.server_stall_s = self.server_stall_s
        if self.numbers is not None:
            _fill_numbers(row, self.numbers)
            self.note(cached_mismatch(self.numbers))
        if self.numbers is not None and self.events:
            _fill_summaries(row, self.events)
            _fill_requests(row, self.events)
        if self.numbers is not None:
            fill_time_split(row, self.events, self.numbers, self.speeds, jeff_on=bool(self.inputs.jeff_model))
        if self.attribution is not None:
            _fill_split(row, self.attribution)
            self.note(self.attribution.note)
        if self.check is not None:
            row.reprocessed_check, row.prompt_tokens_metrics = self.check.status, self.check.metrics_delta
            self.note(self.check.note)
        if self.drafts is not None:
            row.draft_check, row.draft_tokens_metrics = self.drafts.status, self.drafts.drafted
            row.draft_accepted_metrics = self.drafts.accepted
            self.note(self.drafts.note)
        if self.peak is not None:
            row.n_tokens_max_metrics = self.peak.metrics
            self.note(self.peak.note)
        if self.gpu is not None:
            self.gpu.fill(row)
        if self.score is not None:
            self.score.fill(row)
            self.note(self.score.error)
        row.stop_reason = self.stop_reason or ""
        row.failure_labels = self.labels()
        row.error = " | ".join(self.errors)
        return row


def _fill_numbers(row: ResultRow, n: TraceNumbers) -> None:
    row.claimed_done, row.steps, row.model_s = n.claimed_done, n.steps, n.model_s
    row.prompt_tokens, row.prompt_tokens_reprocessed = n.prompt_tokens, n.prompt_tokens_reprocessed
    row.cache_tokens, row.completion_tokens, row.max_request_tokens = (
        n.cache_tokens,
        n.completion_tokens,
        n.max_request_tokens,
    )
    row.clearings, row.cut_answers, row.context_400s = n.clearings, n.cut_answers, n.context_400s
    row.jeff_requests, row.jeff_model_s = n.jeff_requests, n.jeff_model_s
    row.jeff_prompt_tokens, row.jeff_completion_tokens = n.jeff_prompt_tokens, n.jeff_completion_tokens
    row.draft_tokens, row.draft_accepted = n.draft_tokens, n.draft_accepted
    row.cached_tokens, row.n_tokens_max = n.cached_tokens, n.n_tokens_max


def _fill_split(row: ResultRow, attribution: Attribution) -> None:
    row.reprocessed_split = attribution.status
    totals = attribution.totals()
    if totals is None:
        return
    row.reprocessed_cold, row.reprocessed_new, row.reprocessed_answer = totals["cold"], totals["new"], totals["answer"]
    row.reprocessed_by_clearing, row.reprocessed_by_template = totals["clearing"], totals["template"]
    row.reprocessed_unexplained = totals["unexplained"]
    row.reprocessed_by_summary = totals["summary"]
    row.reprocessed_by_truncation, row.reprocessed_by_side = totals["truncation"], totals["side"]


def _fill_requests(row: ResultRow, events: list[Event]) -> None:
    figures = request_figures(events)
    row.streamed, row.first_prompt_tokens = figures.streamed or "", figures.first_prompt_tokens
    requests = figures.requests or {}
    row.requests_main, row.requests_side = requests.get("main"), requests.get("side")
    row.requests_subagent = requests.get("subagent")


def _fill_summaries(row: ResultRow, events: list[Event]) -> None:
    figures = summary_figures(events)
    row.summaries, row.summaries_left_out = figures.made, figures.left_out
    row.summary_tokens, row.summary_model_s = figures.tokens, figures.model_s
    preset = PRESETS.get(row.preset)
    jeff = jeff_first_figures(events, preset.jeff_acts if preset else None)
    row.jeff_steps, row.escalations = jeff.steps, jeff.escalations
    # the run's inputs give both (bench/run/plan.py); a row made from a trace alone takes what the agent read
    row.jeff_first_steps = row.jeff_first_steps if row.jeff_first_steps is not None else jeff.limit
    row.jeff_window = row.jeff_window if row.jeff_window is not None else jeff_window(events)
