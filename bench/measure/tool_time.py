"""tools_s: the time a run spent in its tools and done checks (commands, file reads and edits, pytest), from the
`seconds` the agent's trace gives each `tool` and `done_check` event (docs/internals.md, the trace).

A `run` tool's seconds include asking Jeff about the command; Jeff's own `seconds` are taken out, since his
answer is model time (model_s). Like every sum in the row, it is None when an event it adds up lacks the field
(a trace of an older agent): a partial sum would look measured and be too low.
"""

from __future__ import annotations

import math
from typing import Any

Event = dict[str, Any]
TIMED_EVENTS = ("tool", "done_check")


def tools_seconds(events: list[Event]) -> float | None:
    """The tools' and done checks' seconds minus Jeff's; 0.0 for a run that used neither."""
    spent = [_seconds(e) for e in events if e.get("event") in TIMED_EVENTS]
    jeff = [_seconds(e) for e in events if e.get("event") == "jeff"]
    if any(s is None for s in spent + jeff):
        return None
    total = sum(s for s in spent if s is not None) - sum(s for s in jeff if s is not None)
    return max(0.0, round(total, 3))  # each figure is rounded to the millisecond: never a negative total


def _seconds(event: Event) -> float | None:
    value = event.get("seconds")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return float(value)
