"""What a run recorded of each request it sent to Flint, for a replay against a server (bench/replay/send.py): the
exact body (the agent's request log, bench/measure/request_log.py), what the server answered then (the trace's
timings and usage, or the HTTP status of an error), and the answer as the agent sent it back in the next request.

A request the trace does not name (a retry the agent logged, a run cut short) has its body and no recorded figures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.errors import ResultsError
from bench.measure.request_log import Body, RequestBodies, load_request_log
from bench.measure.trace import Event, int_field, run_events

Message = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    number: int  # its place in the request log
    step: int | None
    body: Body
    status: int | None  # 200 for an answer, the HTTP status of an error; None where the trace does not say
    timings: dict[str, Any] = field(default_factory=dict)  # as the server sent them then ({} when none)
    completion_tokens: int | None = None
    answer: Message | None = None  # the answer as the agent sent it back (None: dropped, or the run's last)

    def figure(self, name: str) -> float | None:
        value = self.timings.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RecordedRun:
    name: str
    folder: Path
    bodies: RequestBodies
    requests: list[RecordedRequest]
    n_ctx: int | None  # the window the agent saw at its start
    info: dict[str, Any]  # run.json: fixture, how Flint was served and started


def load_run(run_dir: Path) -> RecordedRun:
    """A run's requests; ResultsError when the folder holds no request log to send again."""
    bodies = load_request_log(run_dir)
    if bodies is None or not bodies.bodies:
        raise ResultsError(f"{run_dir}: no request log (events.requests.jsonl) to send to a server")
    if not bodies.complete:
        raise ResultsError(f"{run_dir}: the agent's request log reached its size cap; the run cannot be replayed")
    events = run_events(run_dir) if (run_dir / "events.jsonl").is_file() else []
    by_request = _events_by_request(events)
    start = next((e for e in events if e.get("event") == "start"), {})
    requests = []
    for number, body in enumerate(bodies.bodies):
        event = by_request.get(number, {})
        following = bodies.bodies[number + 1]["messages"] if number + 1 < len(bodies.bodies) else []
        count = len(body["messages"])
        answer = following[count] if len(following) > count and following[count].get("role") == "assistant" else None
        requests.append(_request(number, body, event, answer))
    return RecordedRun(
        name=run_dir.name,
        folder=run_dir,
        bodies=bodies,
        requests=requests,
        n_ctx=int_field(start.get("n_ctx")),
        info=_run_json(run_dir),
    )


def drawn(run: RecordedRun) -> str | None:
    """How the run's answers were sampled where a replay draws them again (a temperature above 0, or none given: the
    server's own, and no seed); None where every request was greedy or seeded, so the same build answers alike."""
    temperatures = {body.get("temperature") for body in run.bodies.bodies if body.get("seed") is None}
    sampled = sorted(str(t) for t in temperatures if not (isinstance(t, (int, float)) and t <= 0))
    if not sampled:
        return None
    said = ", ".join("the server's own" if t == "None" else t for t in sampled)
    return f"sampled at temperature {said} without a seed"


def _events_by_request(events: list[Event]) -> dict[int, Event]:
    found: dict[int, Event] = {}
    for event in events:
        number = event.get("request")
        if event.get("event") in ("response", "http_error") and isinstance(number, int):
            found[number] = event
    return found


def _request(number: int, body: Body, event: Event, answer: Message | None) -> RecordedRequest:
    if not event:
        return RecordedRequest(number, None, body, None)
    answered = event.get("event") == "response"
    timings: dict[str, Any] = event["timings"] if answered and isinstance(event.get("timings"), dict) else {}
    usage: dict[str, Any] = event["usage"] if isinstance(event.get("usage"), dict) else {}
    status = 200 if answered else int_field(event.get("status"))
    completion = int_field(usage.get("completion_tokens"))
    return RecordedRequest(
        number=number,
        step=int_field(event.get("step")),
        body=body,
        status=status,
        timings=timings,
        completion_tokens=completion,
        answer=answer,
    )


def _run_json(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
