"""Another agent's reprocessed tokens split by cause, as the article's are (bench/measure/reprocessing.py), from the
request bodies the recording proxy logged (docker/record_proxy.py) and Flint's own tokenizer.

The server keeps one slot: each request is compared with the one the slot last processed, as the article's are. What
differs is that another agent's requests belong to threads (bench/measure/request_threads.py: its main conversation,
side requests, sub-agents), and that its history changes in ways of its own:

- a side request (a title, a summary, a commit message) costs what the server computed for it: `side`;
- a request whose thread's previous request was not the slot's last one (a side request or a sub-agent came between)
  is compared with its own thread's previous request: what the server could have reused from that, had the slot kept
  it, and computed again is `side` (the other request took the slot); a thread's first request is `cold` for the
  main thread and `side` for a sub-agent;
- where the agent changed messages it had sent before, the change is `truncation` when the new history is the old one
  with earlier messages dropped (a history window), and `clearing` otherwise (rewritten: compacted, elided, replaced).

Only chat completions are rendered by /apply-template; a run in another dialect is not split, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.measure.proxy_log import model_exchanges
from bench.measure.reprocessing import (
    CAUSES,
    Attribution,
    RequestSplit,
    Tokenizer,
    split_or_unavailable,
    split_request,
    unavailable,
)
from bench.measure.request_log import Body, RequestBodies
from bench.measure.trace import Event, int_field

CHAT = "POST /v1/chat/completions"


@dataclass(frozen=True)
class Processed:
    """A request the server processed: its thread, body and tokens."""

    thread: str
    body: Body
    tokens: list[int]


def proxy_bodies(exchanges: list[dict[str, Any]]) -> RequestBodies:
    """The log's model requests' bodies, numbered as proxy_events numbers them (a body that is not a JSON object:
    {})."""
    found = [entry.get("request") for entry in model_exchanges(exchanges)]
    return RequestBodies([body if isinstance(body, dict) else {} for body in found], complete=True)


def history_change(sent: list[Any], now: list[Any]) -> str:
    """What the agent did to the messages it sent before: `truncation` when the new request opens with them less some
    earlier ones (the last one kept), `clearing` otherwise (rewritten)."""
    matched = 0
    for message in sent:
        if matched < len(now) and now[matched] == message:
            matched += 1
    dropped = len(sent) - matched
    return "truncation" if dropped and matched and now[matched - 1] == sent[-1] else "clearing"


def attribute_proxy(events: list[Event], bodies: RequestBodies, tokenizer: Tokenizer) -> Attribution:
    """The split of a proxy trace (bench/measure/proxy_log.py); `unavailable` with the reason where it cannot be."""
    routes = {e.get("route") for e in events if e.get("event") in ("response", "http_error") and e.get("route")}
    if routes - {CHAT}:
        others = ", ".join(sorted(str(route) for route in routes - {CHAT}))
        return unavailable(f"reprocessing not split: {others} prompts are not rendered by /apply-template")
    return split_or_unavailable(_attribute, events, bodies, tokenizer)


def _attribute(events: list[Event], bodies: RequestBodies, tokenizer: Tokenizer) -> Attribution:
    result = Attribution("ok")
    previous: Processed | None = None  # what the server's slot last processed
    latest: dict[str, Processed] = {}  # each thread's last request
    missing = 0
    for event in events:
        body = bodies.get(event.get("request"))
        messages = body.get("messages") if body else None
        if event.get("event") == "http_error" and event.get("status") == 500 and isinstance(messages, list):
            previous = Processed(str(event.get("thread")), body or {}, tokenizer.prompt(body or {}))
        if event.get("event") != "response":
            continue
        timings = event["timings"] if isinstance(event.get("timings"), dict) else {}
        cache_n, prompt_n = int_field(timings.get("cache_n")), int_field(timings.get("prompt_n"))
        if body is None or not isinstance(messages, list) or cache_n is None or prompt_n is None:
            missing += 1
            previous = None
            continue
        seen = Processed(str(event.get("thread")), body, tokenizer.prompt(body))
        split = _split(
            previous=previous,
            own=latest.get(seen.thread),
            now=seen,
            timings=(cache_n, prompt_n),
            role=str(event.get("role")),
            tokenizer=tokenizer,
        )
        request = int_field(event.get("request")) or 0
        result.requests.append(
            RequestSplit(
                step=int_field(event.get("step")) or 0,
                request=request,
                prompt_tokens=cache_n + prompt_n,
                counted=len(seen.tokens),
                cache_n=cache_n,
                split=split,
            )
        )
        previous = latest[seen.thread] = seen
    if missing:
        result.status, result.note = "partial", f"{missing} answered request(s) could not be split"
    elif mismatched := sum(r.counted != r.prompt_tokens for r in result.requests):
        result.status = "mismatch"
        result.note = (
            f"{mismatched} of {len(result.requests)} prompts counted otherwise with /apply-template and /tokenize "
            "than the server counted them: the reprocessing split is approximate"
        )
    return result


def _split(
    *,
    previous: Processed | None,
    own: Processed | None,
    now: Processed,
    timings: tuple[int, int],
    role: str,
    tokenizer: Tokenizer,
) -> dict[str, int]:
    """One request's prompt_n by cause, against the slot's last request or, after another thread's, its own thread's
    last one."""
    cache_n, prompt_n = timings
    split = dict.fromkeys(CAUSES, 0)
    if role == "side" or own is None:  # a side request; a thread's first request: cold for the main one
        split["cold" if role == "main" else "side"] = prompt_n
        return split
    against = previous if previous is not None and previous.thread == now.thread else own
    split = split_request(
        previous=(against.body, against.tokens),
        body=now.body,
        tokens=now.tokens,
        cache_n=cache_n,
        prompt_tokens=cache_n + prompt_n,
        tokenizer=tokenizer,
        changed_by=history_change(against.body["messages"], now.body["messages"]),
    )
    if against is not previous:  # what the slot would have kept of the thread, lost to the other request
        split["side"], split["unexplained"] = split["unexplained"], 0
    return split
