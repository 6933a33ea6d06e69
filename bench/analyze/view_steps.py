"""A run's trace as the viewer's steps: per request to Flint its window fill, finish and the server's timings (tokens
computed anew and cached, prefill and decode seconds), and the events after its
answer as items (calls with their arguments and results, Jeff's opinions, clearings with what they changed, cut
answers, 400s, done checks), the texts from the request log (bench.analyze.view_run)."""

from __future__ import annotations

import json
from typing import Any

from bench.analyze.view_run import attach_texts, cut, with_opinions
from bench.measure.request_log import RequestBodies
from bench.measure.trace import Event

FOLD_AT = 160  # characters of a call's arguments shown before they are folded
Item = dict[str, Any]


def steps_of(events: list[Event], n_ctx: int | None, bodies: RequestBodies | None = None) -> list[dict[str, Any]]:
    """The trace, step by step: what happened at each request to Flint and after its answer."""
    steps: dict[int, dict[str, Any]] = {}
    for event in events:
        kind, number = event.get("event"), event.get("step")
        if kind in ("start", "stop") or not isinstance(number, int):
            continue
        step = steps.setdefault(number, {"step": number, "items": [], "message": None, "results": []})
        if kind == "response":
            usage: dict[str, Any] = event["usage"] if isinstance(event.get("usage"), dict) else {}
            total = usage.get("total_tokens")
            step["prompt_tokens"], step["total_tokens"] = usage.get("prompt_tokens"), total
            step["fill"] = round(100 * total / n_ctx, 1) if isinstance(total, int) and n_ctx else None
            step["finish_reason"] = event.get("finish_reason")
            step["answered"] = True
            step.update(_server_figures(event))
        else:
            step["items"].append(item_of(event))
    ordered = [steps[n] for n in sorted(steps)]
    attach_texts(ordered, events, bodies)
    for step in ordered:
        _place_texts(step, bodies is not None)
    return ordered


def _server_figures(event: Event) -> dict[str, Any]:
    """The server's own timings of the answer: prompt tokens computed anew and taken from its cache, prefill and
    decode seconds (left out where it did not say)."""
    timings: dict[str, Any] = event["timings"] if isinstance(event.get("timings"), dict) else {}
    found: dict[str, Any] = {}
    for key, name in (("prompt_n", "anew"), ("cache_n", "cached")):
        if isinstance(timings.get(key), int) and timings[key] >= 0:
            found[name] = timings[key]
    for key, name in (("prompt_ms", "prefill_s"), ("predicted_ms", "decode_s")):
        if isinstance(timings.get(key), (int, float)) and timings[key] >= 0:
            found[name] = round(timings[key] / 1000, 2)
    return found


def _place_texts(step: dict[str, Any], logged: bool) -> None:
    """Each call's result beside it, each clearing's changes in it, Jeff beside his command."""
    results, clearings = list(step.pop("results", [])), list(step.pop("clearings", []))
    for item in step["items"]:
        if item["kind"] == "tool" and results:
            item["result"] = results.pop(0)
        elif item["kind"] == "clear" and clearings:
            item["cleared"] = clearings.pop(0)
    step["items"] = with_opinions(step["items"])
    if step["message"] is None and step.get("answered"):
        if not logged:
            step["message_note"] = "no request log: the model's text is not shown"
        elif step.pop("sent_back", False):
            step["message_note"] = "the answer was not sent back to the model (a cut answer dropped)"
        else:
            step["message_note"] = "the last answer is not in the request log (no request followed it): see its calls"
    step.pop("sent_back", None)


def item_of(event: Event) -> Item:
    """One event as the page shows it: its kind, a one-line summary, and the long part folded."""
    kind = str(event.get("event"))
    if kind == "tool":
        return _tool(event)
    if kind in ("jeff", "approval"):  # the command: in the line when short, folded like a call's arguments when long
        return _command(event, kind)
    describe = SUMMARIES.get(kind)
    return {"kind": kind, "summary": describe(event) if describe else cut(json.dumps(event, ensure_ascii=False), 300)}


def _tool(event: Event) -> Item:
    args = json.dumps(event.get("args"), ensure_ascii=False)
    status = "ok" if event.get("ok") else ("failed: " + str(event["error"]) if event.get("error") else "failed")
    summary = f"{event.get('name')} → {event.get('result_chars')} characters, {status}"
    if event.get("truncated"):
        summary += ", truncated"
    found: Item = {"kind": "tool", "name": event.get("name"), "summary": summary, "args": cut(args)}
    found["folded"] = len(args) > FOLD_AT
    if event.get("name") == "run" and isinstance(event.get("args"), dict):
        found["command"] = event["args"].get("command")
    return found


def _command(event: Event, kind: str) -> Item:
    command = str(event.get("command"))
    shown = f"`{command}`" if len(command) <= FOLD_AT else "the command"
    if kind == "jeff":
        opinion = str(event.get("opinion") or event.get("error") or "no opinion")
        found: Item = {"kind": kind, "summary": f"Jeff on {shown}: {opinion}", "command": command, "opinion": opinion}
    else:
        decision = "run" if event.get("decision") == "run" else "refused"
        found = {"kind": kind, "summary": f"{shown} {decision} (by {event.get('by')})"}
    if len(command) > FOLD_AT:
        found |= {"args": cut(command), "folded": True, "label": "command"}
    return found


SUMMARIES = {
    "clear": lambda e: (
        f"clearing ({e.get('reason')}): {e.get('changed')} messages cleared "
        + (f"at {e.get('total_tokens')} tokens" if e.get("total_tokens") is not None else "after the 400")
    ),
    "cut": lambda e: (
        f"cut answer ({e.get('kind')}), {'dropped' if e.get('dropped') else 'kept'}"
        + (f": {e.get('message')}" if e.get("message") else "")
    ),
    "http_error": lambda e: f"HTTP {e.get('status')} {e.get('type')}: {e.get('message')}",
    "unanswered": lambda e: f"{e.get('route')}: never answered (the agent ended while it waited)",
    "done_check": lambda e: (
        f"done check {'passed' if e.get('passed') else 'failed'}: {e.get('summary')}"
        + (f"; missing {', '.join(map(str, e.get('missing') or []))}" if e.get("missing") else "")
    ),
    "restored": lambda e: (
        f"tests put back after {e.get('after')}: "
        + ", ".join(f"{f.get('path')} ({f.get('was')})" for f in e.get("files") or [] if isinstance(f, dict))
    ),
}
