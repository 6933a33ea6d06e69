"""The numbers of a results row that the agent's event trace holds, and their cross-check against Flint's /metrics.

Everything comes from what the servers reported (usage, timings), never from parsing server logs. A sum is None
("not measured") when any response it adds up lacked the field: a partial sum would look measured and be too low.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeGuard

from bench.measure.server_figures import FigureReader
from bench.measure.trace import Event, int_field, is_clearing, is_context_400, stop_event


@dataclass(frozen=True)
class TraceNumbers:
    """What one run's trace measured; None where it was not measured."""

    stop_reason: str | None
    claimed_done: bool | None
    steps: int  # requests to Flint that got an answer
    start_n_ctx: int | None  # the window the agent read from /props at start
    model_s: float | None  # server time for Flint's and Jeff's answers (timings.prompt_ms + predicted_ms)
    jeff_model_s: float | None  # Jeff's part of model_s
    flint_prompt_s: float | None  # Flint's timings.prompt_ms summed: prefill
    flint_gen_s: float | None  # Flint's timings.predicted_ms summed: decode
    jeff_prompt_s: float | None  # Jeff's, as jeff_model_s: empty when Jeff is off, 0 when never asked
    jeff_gen_s: float | None
    prompt_tokens: int | None
    prompt_tokens_reprocessed: int | None  # sum of timings.prompt_n: what Flint computed anew
    cache_tokens: int | None
    completion_tokens: int | None
    max_request_tokens: int | None  # refused requests' n_prompt_tokens included
    clearings: int
    cut_answers: int
    context_400s: int
    unparsed_500s: int  # answers cut by an HTTP 500: they carry no timings, but the server did process them
    unanswered: int  # requests whose answer never ended (the agent killed while it waited): no timings either
    jeff_requests: int
    jeff_prompt_tokens: int | None
    jeff_completion_tokens: int | None
    problems: tuple[str, ...] = ()  # server figures that were unreadable and left out (bench.measure.server_figures)
    draft_tokens: int | None = None  # Flint's timings.draft_n summed: tokens speculative decoding drafted
    draft_accepted: int | None = None  # timings.draft_n_accepted summed: those the model accepted
    cached_tokens: int | None = None  # usage.prompt_tokens_details.cached_tokens summed: cache_tokens as usage says
    n_tokens_max: int | None = None  # the most tokens one of Flint's answers filled (bench/measure/window_peak.py)


def _sum(values: Iterable[Any]) -> float | None:
    """The sum, or None when any value is missing; None too for no values at all (nothing was answered)."""
    numbers = list(values)
    if not numbers or any(not _is_number(v) for v in numbers):
        return None
    return float(sum(numbers))


def _reprocessed(timings: list[dict[str, Any]], events: list[Event]) -> float | None:
    """The answers' prompt_n summed; a run whose only requests went unanswered (an agent killed during its first)
    reported 0, which /metrics confirms when the server dropped them before their prefill ended."""
    if not timings and any(e.get("event") == "unanswered" for e in events):
        return 0.0
    return _sum(t.get("prompt_n") for t in timings)


def _drafted(timings: list[dict[str, Any]], key: str) -> int | None:
    """A speculative-decoding count summed over the answers: llama-server leaves draft_n and draft_n_accepted out of an
    answer it drafted nothing for, so a missing one is 0 there; None when no answer has one (Flint did not draft) or
    an answer has no timings at all."""
    if not any(key in t for t in timings) or any("predicted_n" not in t for t in timings):
        return None
    return int(sum(t.get(key, 0) for t in timings))


def _peak(timings: list[dict[str, Any]]) -> int | None:
    """The most tokens an answer filled: its cache_n + prompt_n + predicted_n; None when an answer lacks one (the
    largest may be the one not known) or nothing was answered."""
    fills = [_sum(t.get(key) for key in ("cache_n", "prompt_n", "predicted_n")) for t in timings]
    return None if not fills or None in fills else int(max(f for f in fills if f is not None))


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _part_s(timings: list[dict[str, Any]], key: str) -> float | None:
    """One part of the server time (prompt_ms: prefill, predicted_ms: decode) over the answers, in seconds."""
    ms = _sum(t.get(key) for t in timings)
    return None if ms is None else round(ms / 1000, 3)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _largest(sizes: list[Any]) -> float | None:
    """The largest request, when every request's size is known (answered ones' prompt_tokens, refused ones')."""
    measured_sizes = [float(s) for s in sizes if _is_number(s)]
    return max(measured_sizes) if sizes and len(measured_sizes) == len(sizes) else None


def _server_ms(timings: list[dict[str, Any]]) -> float | None:
    return _sum(t.get(key) for t in timings for key in ("prompt_ms", "predicted_ms"))


def is_summary(event: Event, by: str) -> bool:
    """A summary written by `by` (flint or jeff): the summary presets (agent/summary.py)."""
    return event.get("event") == "summary" and event.get("by") == by


def flint_summaries(events: list[Event]) -> list[Event]:
    """The summaries Flint was asked to write that it answered: requests to Flint beside the steps' (they count in
    its tokens, its /metrics and its model time, never in `steps`)."""
    return [e for e in events if is_summary(e, "flint") and "request" in e and e.get("timings") is not None]


def flint_answers(events: list[Event]) -> list[Event]:
    """Every request to Flint that was answered: the steps' responses and the summaries it wrote."""
    return [*(e for e in events if e.get("event") == "response"), *flint_summaries(events)]


def jeff_answers(events: list[Event]) -> list[Event]:
    """Every request to Jeff that was answered: his opinions, the summaries he wrote, his steps and gate answers
    (jeff-first, jeff-gate)."""
    answered = [e for e in events if e.get("event") == "jeff" and e.get("opinion") is not None]
    answered += [e for e in events if is_summary(e, "jeff") and e.get("timings") is not None]
    return answered + [e for e in events if e.get("event") == "jeff_step" and e.get("timings") is not None]


def trace_numbers(events: list[Event], window: int | None = None, jeff_window: int | None = None) -> TraceNumbers:
    """The row's figures from a trace. Sums run over Flint's responses; Jeff's answered opinions are summed apart.
    `window` and `jeff_window` bound the token counts (default: the window the trace's start event names)."""
    responses = [e for e in events if e.get("event") == "response"]
    answered = flint_answers(events)
    start, stop = next((e for e in events if e.get("event") == "start"), None), stop_event(events)
    start_n_ctx = int_field(start.get("n_ctx")) if start else None
    reader = FigureReader(window or start_n_ctx, jeff_window or window or start_n_ctx)
    usages = [reader.figures(e, "usage") for e in answered]
    timings = [reader.figures(e, "timings") for e in answered]
    jeff_on = bool(start and start.get("jeff"))
    jeff_ms, jeff = _jeff_numbers(events, reader, jeff_on)
    refused = [e for e in events if is_context_400(e)]
    largest = _largest([u.get("prompt_tokens") for u in usages] + [reader.refused_size(e) for e in refused])
    flint_ms = _server_ms(timings)
    cached = _whole(_sum(reader.cached(e) for e in answered))  # before reader.notes(), which says what was unreadable
    model_ms = None if flint_ms is None or (jeff_on and jeff_ms is None) else flint_ms + (jeff_ms or 0.0)
    return TraceNumbers(
        stop_reason=str(stop["reason"]) if stop and stop.get("reason") else None,
        claimed_done=None if stop is None else stop.get("reason") == "done",
        steps=len(responses),
        start_n_ctx=start_n_ctx,
        model_s=None if model_ms is None else round(model_ms / 1000, 3),
        flint_prompt_s=_part_s(timings, "prompt_ms"),
        flint_gen_s=_part_s(timings, "predicted_ms"),
        prompt_tokens=_whole(_sum(u.get("prompt_tokens") for u in usages)),
        prompt_tokens_reprocessed=_whole(_reprocessed(timings, events)),
        cache_tokens=_whole(_sum(t.get("cache_n") for t in timings)),
        completion_tokens=_whole(_sum(u.get("completion_tokens") for u in usages)),
        max_request_tokens=None if largest is None else int(largest),
        context_400s=len(refused),
        **_event_counts(events),
        **jeff,
        problems=tuple(reader.notes()),
        draft_tokens=_drafted(timings, "draft_n"),
        draft_accepted=_drafted(timings, "draft_n_accepted"),
        cached_tokens=cached,
        n_tokens_max=_peak(timings),
    )


def _jeff_numbers(events: list[Event], reader: FigureReader, jeff_on: bool) -> tuple[float | None, dict[str, Any]]:
    """Jeff's server milliseconds, and the row's figures of Jeff: his answered opinions summed apart from Flint's."""
    answered = jeff_answers(events)
    usage = [reader.figures(e, "usage", jeff=True) for e in answered]
    timings = [reader.figures(e, "timings", jeff=True) for e in answered]
    asked = any(e.get("event") == "jeff" for e in events)
    ms = _server_ms(timings) if answered else 0.0

    def figure(value: float | None) -> float | None:
        # Jeff off, or asked and never answered (dead, silent): not measured. Never asked: a measured 0.
        return value if jeff_on and (answered or not asked) else None

    def summed(key: str) -> int | None:
        return _whole(figure(_sum(u.get(key) for u in usage) if answered else 0.0))

    return ms, {
        "jeff_model_s": _rounded(figure(None if ms is None else ms / 1000)),
        "jeff_prompt_s": _rounded(figure(_part_s(timings, "prompt_ms") if answered else 0.0)),
        "jeff_gen_s": _rounded(figure(_part_s(timings, "predicted_ms") if answered else 0.0)),
        "jeff_requests": sum(1 for e in events if e.get("event") == "jeff"),
        "jeff_prompt_tokens": summed("prompt_tokens"),
        "jeff_completion_tokens": summed("completion_tokens"),
    }


def _event_counts(events: list[Event]) -> dict[str, int]:
    """What the agent did to its conversation, and the answers it lost: counted from the trace's events."""
    return {
        "clearings": sum(1 for e in events if is_clearing(e)),
        "cut_answers": sum(1 for e in events if e.get("event") == "cut"),
        "unparsed_500s": sum(1 for e in events if e.get("event") == "cut" and e.get("kind") == "unparsed"),
        "unanswered": sum(1 for e in events if e.get("event") == "unanswered"),
    }


def cached_mismatch(numbers: TraceNumbers) -> str | None:
    """A note where the usage's cached tokens differ from the timings' cache_n (b11434 reports the same count in
    both); None where they agree or either is not measured."""
    cached, cache_n = numbers.cached_tokens, numbers.cache_tokens
    if cached is None or cache_n is None or cached == cache_n:
        return None
    return f"cached tokens: usage.prompt_tokens_details.cached_tokens sum {cached} != timings.cache_n sum {cache_n}"


@dataclass(frozen=True)
class ReprocessedCheck:
    """DESIGN §3.5's cross-check: the trace's sum of timings.prompt_n against Flint's /metrics counter."""

    status: str  # ok | mismatch | counter_reset | unchecked
    metrics_delta: int | None  # change of llamacpp:prompt_tokens_total over the run, when it can be trusted
    note: str | None  # why it is not ok, for the row's error column


def check_reprocessed(numbers: TraceNumbers, before: float | None, after: float | None) -> ReprocessedCheck:
    """Compare the trace's reprocessed tokens with the counter read before and after the run (None: not read)."""
    if before is None or after is None:
        note = "prompt_tokens_total not read from Flint's /metrics, so reprocessed tokens are not cross-checked"
        return ReprocessedCheck("unchecked", None, note)
    if not (math.isfinite(before) and math.isfinite(after)):
        return ReprocessedCheck("unchecked", None, f"Flint's /metrics counter read {before} then {after}; not checked")
    if after < before:
        note = f"Flint's /metrics counter went down ({before:.0f} -> {after:.0f}): the server restarted during the run"
        return ReprocessedCheck("counter_reset", None, note)
    delta = int(after - before)
    trace = numbers.prompt_tokens_reprocessed
    if trace is None:
        return ReprocessedCheck("unchecked", delta, f"no timings in the trace; Flint's /metrics counted {delta}")
    if trace == delta:
        return ReprocessedCheck("ok", delta, None)
    if numbers.unanswered and delta > trace:  # their prefill may have ended before they were dropped
        note = (
            f"reprocessed tokens not checked: {numbers.unanswered} request(s) were never answered (the agent ended "
            f"while it waited), and /metrics counted {delta - trace} tokens more than the answers' sum {trace}: the "
            "prompt of one whose prefill had ended, which the server reported to no one"
        )
        return ReprocessedCheck("unchecked", delta, note)
    cut = numbers.unparsed_500s
    why = f" ({cut} request(s) ended in an HTTP 500, which carries no timings)" if cut else ""
    return ReprocessedCheck("mismatch", delta, f"reprocessed tokens: trace sum {trace} != /metrics delta {delta}{why}")
