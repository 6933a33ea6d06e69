"""What an agent's requests were like, from its trace: whether their answers were streamed, how large its first prompt
was, and how many requests each thread made (bench/measure/request_threads.py). The roles and streaming come from the
recording proxy's log (bench/measure/proxy_log.py); the article's own trace says neither, so its row leaves them
empty (not measured), and gives only the first prompt's size.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.measure.request_threads import ROLES
from bench.measure.trace import Event, int_field


@dataclass(frozen=True)
class RequestFigures:
    """None: not measured."""

    streamed: str | None  # yes | no | "N of M"
    first_prompt_tokens: int | None
    requests: dict[str, int] | None  # by role


def _prompt_tokens(event: Event) -> int | None:
    """The prompt's size as the server counted it: from its timings, its usage, or a context 400's own count."""
    timings = event["timings"] if isinstance(event.get("timings"), dict) else {}
    cache_n, prompt_n = int_field(timings.get("cache_n")), int_field(timings.get("prompt_n"))
    if cache_n is not None and prompt_n is not None:
        return cache_n + prompt_n
    usage = event["usage"] if isinstance(event.get("usage"), dict) else {}
    for name in ("prompt_tokens", "input_tokens"):  # chat completions; Messages and Responses
        if (found := int_field(usage.get(name))) is not None:
            return found + (int_field(usage.get("cache_read_input_tokens")) or 0)
    return int_field(event.get("n_prompt_tokens"))


def request_figures(events: list[Event]) -> RequestFigures:
    """The figures of a run's trace (the first prompt is the main thread's; the article's requests are all its own)."""
    asked = [e for e in events if e.get("event") in ("response", "http_error") and e.get("role", "main") == "main"]
    first = next((size for e in asked if (size := _prompt_tokens(e)) is not None), None)
    if not any("role" in e for e in events):  # the article's own trace
        return RequestFigures(None, first, None)
    answered = [e for e in events if e.get("event") == "response"]
    streamed = sum(bool(e.get("streamed")) for e in answered)
    said = (
        "yes" if answered and streamed == len(answered) else "no" if not streamed else f"{streamed} of {len(answered)}"
    )
    roles = [e["role"] for e in events if e.get("event") in ("response", "http_error", "unanswered") and "role" in e]
    return RequestFigures(said if answered else None, first, {role: roles.count(role) for role in ROLES})
