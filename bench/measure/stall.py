"""Time lost to a server not computing, from the trace: each request's latency against the server's own timings.

The agent writes each event when the work it reports has ended, so a request to Flint took from the event before
its `response` to the response itself; Jeff's opinions carry their own `seconds`. A server answers in the time its
timings report (prompt_ms + predicted_ms) plus milliseconds of HTTP, JSON and chat template; anything beyond
SLACK_S per request is time the server was not computing (stopped, swapped out, starved of CPU, restarting). A
request that got no answer at all (refused, timed out, cut off, 503) lost all of its time. An answer without
timings, a refused prompt (400) or an unparseable answer (500) were computed: they count nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.measure.trace import Event

SLACK_S = 1.0
UNANSWERED_STATUSES = (None, 502, 503, 504)  # no HTTP answer, or a gateway/loading answer: nothing was computed


@dataclass(frozen=True)
class Stall:
    """Seconds lost per server, how many requests got no answer, and the worst request."""

    flint_s: float
    jeff_s: float
    unanswered: int
    worst: str  # "step 3: 58.9 s beyond the server's timings"; "" when nothing was lost

    @property
    def seconds(self) -> float:
        return round(self.flint_s + self.jeff_s, 2)


def server_time(timings: object) -> float | None:
    """prompt_ms + predicted_ms in seconds, or None when the answer did not say."""
    if not isinstance(timings, dict):
        return None
    parts = [timings.get("prompt_ms"), timings.get("predicted_ms")]
    if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in parts):
        return None
    return float(sum(parts)) / 1000  # type: ignore[arg-type]


def server_stall(events: list[Event]) -> Stall:
    flint = jeff = worst_s = 0.0
    unanswered, worst = 0, ""
    last_t: float | None = None
    for event in events:
        t = event.get("t")
        if not isinstance(t, (int, float)):
            continue
        lost, what = _lost(event, None if last_t is None else t - last_t)
        unanswered += what == "no answer"
        if lost > 0:
            if event.get("event") == "jeff":
                jeff += lost
            else:
                flint += lost
            if lost > worst_s:
                worst_s = lost
                worst = f"{_who(event)} step {event.get('step')}: {lost:.1f} s {what}"
        last_t = t
    return Stall(round(flint, 2), round(jeff, 2), unanswered, worst)


def _lost(event: Event, gap: float | None) -> tuple[float, str]:
    """Seconds this event's request lost, and how ("beyond the server's timings" or "no answer")."""
    kind = event.get("event")
    if kind == "response" and gap is not None:
        server = server_time(event.get("timings"))
        return _beyond(gap, server)
    if kind == "http_error" and gap is not None and event.get("status") in UNANSWERED_STATUSES:
        return max(gap, 0.0), "no answer"
    if kind == "jeff" and isinstance(event.get("seconds"), (int, float)):
        seconds = float(event["seconds"])
        if event.get("timings") is None and event.get("error"):  # no answer at all, not an empty one
            return seconds, "no answer"
        return _beyond(seconds, server_time(event.get("timings")))
    return 0.0, ""


def _beyond(latency: float, server: float | None) -> tuple[float, str]:
    if server is None or latency - server <= SLACK_S:
        return 0.0, ""
    return latency - server, "beyond the server's timings"


def _who(event: Event) -> str:
    return "Jeff" if event.get("event") == "jeff" else "Flint"
