"""The recording proxy's log (docker/record_proxy.py) read as an event trace, so that an agent other than the
article's gets the same row: each request is a `request` event when it came (so the agent's own time before it is
not taken for the server's) and a `response` event when its answer ended (usage, timings and finish reason as the
server sent them), its refused ones `http_error` events, one never answered (the agent ended while it waited) an
`unanswered` event, and its end a `stop` event. bench.measure.trace_numbers and the /metrics cross-check then read it
as they read the article's own trace.

Where the proxy kept the run's step limit, its log ends with a line of its own (`{"stopped": "step_limit", ...}`,
no route: not a request) once the limit was reached and no request was left with the server; the bench ended the
agent on it (bench/sandbox/proxy_stop.py), and that is the run's stop reason.
"""

from __future__ import annotations

import hashlib
from typing import Any

from bench.json_lines import json_objects
from bench.measure.request_threads import threads
from bench.measure.trace import Event

MODEL_ROUTES = ("POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages")
# Finish reasons of the other dialects that mean what chat completions' "length" means: the answer was cut.
CUT = {"max_tokens": "length", "incomplete": "length"}


STOPPED = "stopped"  # the key of the proxy's own line that ended the run (docker/record_proxy.py's StepLimit)


def proxy_stop(exchanges: list[dict[str, Any]]) -> str | None:
    """The stop reason the proxy wrote (`step_limit`), or None when the agent ended of itself."""
    said = [entry[STOPPED] for entry in exchanges if isinstance(entry.get(STOPPED), str)]
    return said[0] if said else None


def stop_reason(exchanges: list[dict[str, Any]], agent_stop: str) -> str:
    """The run's stop reason: the proxy's where it ended the run (its step limit); where the agent ended, not done
    and not killed, right after its last model request: `context_exhausted` if the server refused that prompt as
    larger than the window (a context 400: mini-swe-agent raises on it), `server_error` if no answer to it came
    (the proxy's answer limit, the run's request timeout, cut it: Qwen Code's 17,973-token first prompt at 0.6 tokens
    a second on two busy cores); else the agent's own (`agent_stop`)."""
    if (proxy := proxy_stop(exchanges)) is not None:
        return proxy
    asked = model_exchanges(exchanges)
    if not asked or agent_stop in ("done", "interrupted"):
        return agent_stop
    last = asked[-1]
    error = last.get("error")
    if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
        return "context_exhausted"
    return "server_error" if unanswered(last) else agent_stop


def unanswered(entry: dict[str, Any]) -> bool:
    """Whether the server never finished answering a request to the agent (still in flight at the end, or cut before
    it told what its prompt cost)."""
    return bool(entry.get("in_flight")) or (bool(entry.get("answer_cut")) and not prompt_figures_came(entry))


def read_exchanges(text: str) -> list[dict[str, Any]]:
    """The log's lines that are JSON objects (a line the proxy was stopped in the middle of is skipped)."""
    return list(json_objects(text))


def model_exchanges(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exchanges that asked the model (/props, /health, /v1/models, count_tokens computed nothing)."""
    return [entry for entry in exchanges if entry.get("route") in MODEL_ROUTES]


def proxy_events(exchanges: list[dict[str, Any]], n_ctx: int, stop_reason: str) -> list[Event]:
    """The trace an agent would have written: start, one event per model request, stop. Each request's events say
    which body of the log's model requests it was (`request`, from 0), and its thread (bench.measure.request_threads:
    `role`, and `thread`, a short hash of the signature)."""
    events: list[Event] = [{"t": 0.0, "event": "start", "n_ctx": n_ctx, "jeff": None, "source": "proxy"}]
    step = 0
    asked = model_exchanges(exchanges)
    for entry, (role, signature) in zip(asked, threads([entry.get("request") for entry in asked]), strict=True):
        step += 1
        t, status = entry.get("t", 0.0), entry.get("status")
        thread = hashlib.sha256(signature.encode()).hexdigest()[:12]
        tags = {"request": step - 1, "role": role, "thread": thread}
        if isinstance(entry.get("t_sent"), (int, float)):  # the request's wait began here (bench.measure.stall)
            events.append({"t": entry["t_sent"], "event": "request", "step": step, "route": entry["route"]})
        if isinstance(status, int) and status >= 400:
            found = entry.get("error")
            error: dict[str, Any] = found if isinstance(found, dict) else {}
            refused: Event = {"t": t, "event": "http_error", "step": step, "status": status, **tags}
            refused |= {"type": str(error.get("type") or "http_error"), "message": str(error.get("message") or "")}
            refused |= {k: error[k] for k in ("n_prompt_tokens", "n_ctx") if k in error}  # a context 400's sizes
            events.append(refused)
            continue
        if unanswered(entry):
            events.append(unanswered_event(entry, t, step, tags))
            continue
        response = response_event(entry, t, step, tags)
        events.append(response)
        if response["finish_reason"] == "length":  # as the article's agent notes a cut answer, taken as it came
            events.append({"t": t, "event": "cut", "step": step, "kind": "length", "dropped": False})
    events.append({"t": events[-1]["t"], "event": "stop", "reason": stop_reason, "steps": step})
    return events


def prompt_figures_came(entry: dict[str, Any]) -> bool:
    """Whether an answer cut before its end still told what its prompt cost: the server's timings came, or a Messages
    stream began (its first event, message_start, gives the tokens computed and reused: llama-server sends it once
    the prefill has ended)."""
    usage = entry.get("usage")
    began = entry.get("route") == "POST /v1/messages" and isinstance(usage, dict) and "input_tokens" in usage
    return isinstance(entry.get("timings"), dict) or began


def response_event(entry: dict[str, Any], t: float, step: int, tags: dict[str, Any]) -> Event:
    """An answered request: its finish reason (another dialect's cut read as "length"), usage and timings."""
    finish = entry.get("finish_reason")
    finish = CUT.get(finish, finish) if isinstance(finish, str) else None
    response: Event = {"t": t, "event": "response", "step": step, "finish_reason": finish, **tags}
    response |= {name: entry[name] for name in ("usage", "timings") if isinstance(entry.get(name), dict)}
    response |= {"route": entry["route"], "streamed": bool(entry.get("streamed"))}
    return response | dialect_figures(response)


def unanswered_event(entry: dict[str, Any], t: float, step: int, tags: dict[str, Any]) -> Event:
    """A request the server never finished answering to the agent (it left, or was killed, while it waited): no
    timings, so the trace's sum leaves it out, and the /metrics check says so where the server counted it."""
    begun = isinstance(entry.get("status"), int)  # the answer's head came: its prefill had ended
    unanswered: Event = {"t": t, "event": "unanswered", "step": step, "route": entry.get("route"), **tags}
    return unanswered | {"streamed": bool(entry.get("streamed")), "answer_begun": begun}


def dialect_figures(response: Event) -> Event:
    """The Messages and Responses dialects' usage in chat completions' names (prompt_tokens counts the cached part
    too); and a Messages answer's computed tokens, which llama-server sends with no `timings`: its `input_tokens`
    are the prompt tokens it computed (prompt_n) and `cache_read_input_tokens` those it reused (cache_n), so the
    sum is still checked against /metrics (its prefill and decode times stay unknown)."""
    usage = response.get("usage")
    if not isinstance(usage, dict) or "prompt_tokens" in usage or not isinstance(usage.get("input_tokens"), int):
        return {}
    computed, cached = usage["input_tokens"], usage.get("cache_read_input_tokens")
    messages = response.get("route") == "POST /v1/messages"
    prompt = computed + cached if messages and isinstance(cached, int) else computed
    found: Event = {"usage": usage | {"prompt_tokens": prompt, "completion_tokens": usage.get("output_tokens")}}
    if messages and "timings" not in response:
        found["timings"] = {"prompt_n": computed, "cache_n": cached if isinstance(cached, int) else 0}
    return found
