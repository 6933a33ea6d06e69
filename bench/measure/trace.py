"""A run's event trace read back (docs/internals.md "The event trace"): loading events.jsonl, the events several
modules look for, and the requests to Flint in it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import ResultsError

Event = dict[str, Any]
TRACE_FILE = "events.jsonl"


def load_trace(path: str | Path) -> list[Event]:
    """The events of a JSON-lines trace; a last line cut short (the agent was killed mid-write) is dropped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise ResultsError(f"cannot read event trace {path}: {e.strerror}") from e
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    events: list[Event] = []
    for index, (line_no, line) in enumerate(numbered):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if index == len(numbered) - 1:
                break
            raise ResultsError(f"{path}:{line_no} is not a JSON event; the trace is damaged") from None
        if not isinstance(event, dict):
            raise ResultsError(f"{path}:{line_no} is not a JSON object; the trace is damaged")
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
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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
    return Request(step, prompt, int_field(usage.get("completion_tokens")), processed, after_clearing)
