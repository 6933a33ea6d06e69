"""A run's event trace read back (docs/internals.md "The event trace"): loading events.jsonl, the events several
modules look for, and the requests to Flint in it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import ResultsError

Event = dict[str, Any]
TRACE_FILE = "events.jsonl"
# Nesting of one event: the agent's own go a few levels deep (a tool call's arguments inside a message). A deeper
# line is not one the agent wrote for itself (a server's `usage` nested 981 deep was copied in verbatim), and
# parsing or printing it could exhaust the interpreter's recursion limit.
MAX_DEPTH = 64
# Characters of one event. The agent caps what it writes per event far below this (agent/event_bounds.py: some
# 24,000 characters of fields, lists and strings cut with a count), so a longer line is the agent's failure to do
# so: its run's resource_exhausted, not the bench's.
EVENT_LIMIT = 1024 * 1024


class EventTooLarge(ResultsError):
    """A trace line over EVENT_LIMIT: the agent wrote more than any event may hold."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]")


def nesting_depth(line: str) -> int:
    """How deep the arrays and objects of one JSON text nest (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", line))
    depth = deepest = 0
    for char in brackets:
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def parse_event(line: str) -> tuple[Event | None, str]:
    """One trace line as an event, or None and why not: not JSON, not an object, or nested over MAX_DEPTH."""
    if nesting_depth(line) > MAX_DEPTH:
        return None, f"nests deeper than {MAX_DEPTH} levels"
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None, "is not a JSON event"
    return (event, "") if isinstance(event, dict) else (None, "is not a JSON object")


def load_trace(path: str | Path) -> list[Event]:
    """The events of a JSON-lines trace; a last line cut short (the agent was killed mid-write) is dropped.
    ResultsError for any other line that is not an event: the trace is damaged."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise ResultsError(f"cannot read event trace {path}: {e.strerror}") from e
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    events: list[Event] = []
    for index, (line_no, line) in enumerate(numbered):
        if len(line) > EVENT_LIMIT:
            raise EventTooLarge(
                f"{path}:{line_no} is one event of {len(line)} characters, over the {EVENT_LIMIT} allowed"
            )
        event, why = parse_event(line)
        if event is None and index == len(numbered) - 1 and why == "is not a JSON event":
            break
        if event is None:
            raise ResultsError(f"{path}:{line_no} {why}; the trace is damaged")
        events.append(event)
    return events


def run_events(run_dir: Path) -> list[Event]:
    """The trace of a run directory; no events when the agent never wrote one."""
    path = run_dir / TRACE_FILE
    return load_trace(path) if path.exists() else []


def stop_event(events: list[Event]) -> Event | None:
    stops = [event for event in events if event.get("event") == "stop"]
    return stops[-1] if stops else None


def is_clearing(event: Event) -> bool:
    """A `clear` event that changed something; one that changed 0 messages left the prompt (and cache) as it was."""
    return event.get("event") == "clear" and (int_field(event.get("changed")) or 0) > 0


def is_context_400(event: Event) -> bool:
    """A request the server refused because the prompt did not fit the window."""
    return event.get("event") == "http_error" and event.get("type") == "exceed_context_size_error"


def int_field(value: Any) -> int | None:
    """A count from an event, or None when absent or not a number (true and false are not counts)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


@dataclass(frozen=True)
class Request:
    """One answered request to Flint, as its `response` event told it."""

    step: int
    prompt_tokens: int | None  # the whole prompt, cached part included
    completion_tokens: int | None
    processed: int | None  # timings.prompt_n: prompt tokens computed anew
    after_clearing: bool

    @property
    def share_anew(self) -> float | None:
        if self.processed is None or not self.prompt_tokens:
            return None
        return self.processed / self.prompt_tokens


def requests_of(events: list[Event]) -> list[Request]:
    """The answered requests in order; the first one after each `clear` event is marked."""
    found: list[Request] = []
    cleared = False
    for event in events:
        if is_clearing(event):
            cleared = True
        elif event.get("event") == "response":
            found.append(_request(event, cleared, default_step=len(found) + 1))
            cleared = False
    return found


def _request(event: Event, after_clearing: bool, default_step: int) -> Request:
    usage, timings = event.get("usage") or {}, event.get("timings") or {}
    processed = int_field(timings.get("prompt_n"))
    prompt = int_field(usage.get("prompt_tokens"))
    if prompt is None and processed is not None:  # older servers: the prompt is what was computed plus the cache
        prompt = processed + (int_field(timings.get("cache_n")) or 0)
    step = int_field(event.get("step")) or default_step
    return Request(
        step=step,
        prompt_tokens=prompt,
        completion_tokens=int_field(usage.get("completion_tokens")),
        processed=processed,
        after_clearing=after_clearing,
    )
