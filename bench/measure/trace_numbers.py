"""The numbers of a results row, computed from the agent's event trace and Flint's /metrics counter.

Everything comes from what the servers reported (usage, timings), never from parsing server logs.
"""

from __future__ import annotations

from typing import Any

from bench.measure.trace import is_clearing, is_context_400, stop_event


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return ""
    return str(int(value)) if digits == 0 else f"{value:.{digits}f}"


def trace_metrics(events: list[dict[str, Any]], wall_s: float) -> dict[str, str]:
    """Row values measured by the trace. Sums run over Flint's responses; Jeff's time counts as model time too."""
    responses = [e for e in events if e["event"] == "response"]
    timings = [e.get("timings") or {} for e in responses]
    usages = [e.get("usage") or {} for e in responses]
    jeffs = [e for e in events if e["event"] == "jeff"]
    refused = [e for e in events if is_context_400(e)]
    stop = stop_event(events)
    model_ms = sum(_num(t.get("prompt_ms")) + _num(t.get("predicted_ms")) for t in timings)
    model_ms += sum(
        _num((j.get("timings") or {}).get("prompt_ms")) + _num((j.get("timings") or {}).get("predicted_ms"))
        for j in jeffs
    )
    requests = [_num(u.get("prompt_tokens")) for u in usages] + [_num(e.get("n_prompt_tokens")) for e in refused]
    have_timings = bool(responses) and all("prompt_n" in t for t in timings)
    model_s = model_ms / 1000
    return {
        "stop_reason": stop["reason"] if stop else "",
        "steps": _fmt(stop.get("steps"), 0) if stop else "",
        "claimed_done": "" if stop is None else str(stop["reason"] == "done").lower(),
        "wall_s": _fmt(wall_s),
        "model_s": _fmt(model_s),
        "harness_s": _fmt(max(wall_s - model_s, 0.0)),
        "prompt_tokens": _fmt(sum(_num(u.get("prompt_tokens")) for u in usages), 0),
        "prompt_tokens_reprocessed": _fmt(sum(_num(t.get("prompt_n")) for t in timings), 0) if have_timings else "",
        "cache_tokens": _fmt(sum(_num(t.get("cache_n")) for t in timings), 0) if have_timings else "",
        "completion_tokens": _fmt(sum(_num(u.get("completion_tokens")) for u in usages), 0),
        "max_request_tokens": _fmt(max(requests), 0) if requests else "",
        "clearings": str(sum(1 for e in events if is_clearing(e))),
        "cut_answers": str(sum(1 for e in events if e["event"] == "cut")),
        "context_400s": str(len(refused)),
        "jeff_requests": str(len(jeffs)),
    }


def reprocessed_mismatch(events: list[dict[str, Any]], reprocessed: str, metrics_delta: float | None) -> str | None:
    """The cross-check of DESIGN §3.5: sum of timings.prompt_n must equal the /metrics counter's change."""
    if metrics_delta is None:
        return "prompt_tokens_total not read from Flint's /metrics, so reprocessed tokens are not cross-checked"
    if reprocessed == "":
        return f"no timings in the trace; Flint's /metrics counted {int(metrics_delta)} prompt tokens processed"
    if int(reprocessed) == int(metrics_delta):
        return None
    unparsed = sum(1 for e in events if e["event"] == "cut" and e.get("kind") == "unparsed")
    why = f" ({unparsed} request(s) ended in an HTTP 500, which carries no timings)" if unparsed else ""
    return f"reprocessed tokens: trace sum {reprocessed} != /metrics delta {int(metrics_delta)}{why}"
