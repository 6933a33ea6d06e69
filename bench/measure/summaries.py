"""The summaries of a run (the trace's `summary` events, agent/summary.py): how many were used and left out, what
they generated and the model time they took (a sum is None when a summary that was answered lacks the figure); and
what Jeff did in jeff-first and jeff-gate (`jeff_step` and `escalate` events, agent/jeff_first.py)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.measure.trace import Event, int_field


@dataclass(frozen=True)
class SummaryFigures:
    made: int
    left_out: int
    tokens: int | None
    model_s: float | None


def summary_figures(events: list[Event]) -> SummaryFigures:
    summaries = [e for e in events if e.get("event") == "summary"]
    answered = [e for e in summaries if isinstance(e.get("timings"), dict)]
    tokens = [int_field(e["timings"].get("predicted_n")) for e in answered]
    ms = [_number(e["timings"].get(key)) for e in answered for key in ("prompt_ms", "predicted_ms")]
    made = sum(1 for e in summaries if e.get("applied"))
    return SummaryFigures(
        made=made,
        left_out=len(summaries) - made,
        tokens=None if None in tokens else sum(t for t in tokens if t is not None),
        model_s=None if None in ms else round(sum(m for m in ms if m is not None) / 1000, 3),
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@dataclass(frozen=True)
class JeffFirstFigures:
    steps: int | None  # Jeff's actions with the tools
    escalations: int | None
    limit: int | None  # jeff-first's K


def jeff_window(events: list[Event]) -> int | None:
    """Jeff's window, where the agent read it (the presets where he summarizes or takes steps)."""
    start = next((e for e in events if e.get("event") == "start"), {})
    return int_field(start.get("jeff_n_ctx"))


def jeff_first_figures(events: list[Event], mode: str | None) -> JeffFirstFigures:
    """Jeff's steps and the escalations; all None for a preset where Jeff does not take steps (`mode` None)."""
    if mode is None:
        return JeffFirstFigures(None, None, None)
    acted = sum(1 for e in events if e.get("event") == "jeff_step" and e.get("kind") == "act" and e.get("tool_calls"))
    escalations = sum(1 for e in events if e.get("event") == "escalate")
    start = next((e for e in events if e.get("event") == "start"), {})
    return JeffFirstFigures(acted, escalations, int_field(start.get("jeff_steps")) if mode == "first" else None)
