"""A run's recorded requests sent to a llama-server again, in order, each body exactly as the run sent it: so every
request carries the run's own answers (the recorded ones, never the ones the server gives now), and the server's
prompt cache meets the same prompts in the same order. Per request: the server's own prompt_n, cache_n and
milliseconds now, beside what it reported then (bench/replay/recorded.py).

Whether the server answered as it did then matters: its cache holds the answer it generated, and the next prompt
reuses the part of it that matches the answer as sent back. A request whose predecessor was answered otherwise may
compute other tokens anew; `answered_otherwise` says where that happened. The tokens the server had cached and
computed again anyway (server-side loss: a sliding window without a checkpoint, a build that erases its
checkpoints) are counted per request by the reprocessing split (bench/measure/reprocessing.py) as `unexplained`.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench import http_client
from bench.llama.api import erase_slot
from bench.llama.tokenizer import ServerTokenizer
from bench.measure.reprocessing import attribute
from bench.measure.trace import Event, int_field
from bench.replay.recorded import Message, RecordedRequest, RecordedRun

TIMEOUT = httpx.Timeout(900.0, connect=5.0)  # one request may compute a whole window on a slow machine


@dataclass
class Sent:
    """One recorded request and what the server answered to it now."""

    run: str
    recorded: RecordedRequest
    status: int | None  # None: no HTTP answer
    timings: dict[str, Any] = field(default_factory=dict)
    message: Message | None = None
    completion_tokens: int | None = None
    error: str = ""
    unexplained: int | None = None  # tokens the server had cached and computed again (None: not split)
    answered_otherwise: bool | None = None  # the server's answer differs from the run's (None: nothing to compare)

    def figure(self, name: str) -> float | None:
        value = self.timings.get(name)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def answered_otherwise(sent: Sent) -> bool | None:
    """Whether the server answered otherwise than the run's did: the answer as sent back when the run kept it, else
    its length; an error where the run got an answer (or the other way) counts. None: nothing recorded to compare."""
    recorded = sent.recorded
    if sent.status != 200 or recorded.status != 200:
        return None if recorded.status is None else sent.status != recorded.status
    if recorded.answer is not None and sent.message is not None:
        return answer_key(sent.message) != answer_key(recorded.answer)
    if recorded.completion_tokens is None or sent.completion_tokens is None:
        return None
    return sent.completion_tokens != recorded.completion_tokens


def answer_key(message: Message) -> tuple[str, tuple[tuple[str, str], ...]]:
    """An answer as text and tool calls (names and arguments as parsed JSON), ids and spacing left out."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        with contextlib.suppress(ValueError):  # arguments that are not JSON are compared as they came
            arguments = json.dumps(json.loads(arguments), sort_keys=True) if isinstance(arguments, str) else arguments
        calls.append((str(function.get("name")), json.dumps(arguments, sort_keys=True)))
    return str(message.get("content") or "").strip(), tuple(calls)


def send(client: httpx.Client, url: str, request: RecordedRequest, run: str) -> Sent:
    try:
        response = client.post(url.rstrip("/") + "/v1/chat/completions", json=request.body)
    except httpx.HTTPError as e:
        return Sent(run, request, None, error=f"{type(e).__name__}: {e}")
    try:
        answer = response.json()
    except ValueError:
        return Sent(run, request, response.status_code, error="the answer is not JSON")
    if response.status_code != 200 or not isinstance(answer, dict):
        return Sent(run, request, response.status_code, error=str(answer)[:300])
    choices = answer.get("choices") or [{}]
    usage: dict[str, Any] = answer["usage"] if isinstance(answer.get("usage"), dict) else {}
    timings: dict[str, Any] = answer["timings"] if isinstance(answer.get("timings"), dict) else {}
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    return Sent(
        run=run,
        recorded=request,
        status=200,
        timings=timings,
        message=message,
        completion_tokens=int_field(usage.get("completion_tokens")),
    )


def replay_run(run: RecordedRun, url: str) -> tuple[list[Sent], str | None]:
    """Every request of `run` sent to `url` in order, after its prompt cache is emptied; the results and a note when
    the cache could not be emptied (the first request may then reuse earlier traffic)."""
    note = erase_slot(url)
    with http_client.client(timeout=TIMEOUT) as client:
        results = [send(client, url, request, run.name) for request in run.requests]
    for sent in results:
        sent.answered_otherwise = answered_otherwise(sent)
    with ServerTokenizer(url) as tokenizer:
        split = attribute(_as_events(results), run.bodies, tokenizer)
    by_request = {r.request: r for r in split.requests}
    for sent in results:
        if (found := by_request.get(sent.recorded.number)) is not None:
            sent.unexplained = found.split["unexplained"]
    return results, note


def _as_events(results: list[Sent]) -> list[Event]:
    """The replay's answers as the trace events the reprocessing split reads."""
    events: list[Event] = []
    for step, sent in enumerate(results, start=1):
        number = sent.recorded.number
        if sent.status == 200 and sent.timings:
            events.append({"event": "response", "request": number, "step": step, "timings": sent.timings})
        elif sent.status == 500:  # processed, then not parsed: the slot holds it
            events.append({"event": "http_error", "status": 500, "request": number, "step": step})
    return events
