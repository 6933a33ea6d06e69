"""The scripted replies of the llama-server double (bench/testing/fake_llama.py): plain dicts, so that a JSON
script file can hold them too, with the exact messages the real server sends where a test depends on them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Reply = dict[str, Any]
OLD_PARSE_MESSAGE = 'Failed to parse input at pos 131: <tool_call>\n{"name": "write_file", "arguments": {"pa'
NEW_PARSE_MESSAGE = "The model produced output that does not match the expected peg-native format"


# Scripted replies: plain dicts, so a JSON script file can hold them too. Each may carry "delay" (seconds the answer
# waits beyond its timings: a stalled server), "compute_s" (seconds it takes as the server's own work, in its timings'
# predicted_ms: a server busy decoding), and "usage" or "timings" to send in place of the computed ones (a server that
# reports nonsense).


def tool_calls(
    calls: Iterable[tuple[str, dict[str, Any] | str]], *, content: str = "", reasoning: str | None = None
) -> Reply:
    """An answer calling tools; arguments given as a string are sent as they are (for malformed JSON)."""
    return {"kind": "answer", "content": content, "reasoning": reasoning, "tool_calls": [list(c) for c in calls]}


def tool_call(name: str, args: dict[str, Any] | str, *, content: str = "", reasoning: str | None = None) -> Reply:
    return tool_calls([(name, args)], content=content, reasoning=reasoning)


def prose(text: str, *, reasoning: str | None = None) -> Reply:
    return {"kind": "answer", "content": text, "reasoning": reasoning, "tool_calls": []}


def length_cut(
    text: str = "Let me think about how to change",
    *,
    reasoning: str | None = None,
    calls: Iterable[tuple[str, dict[str, Any] | str]] = (),
    completion_tokens: int | None = None,
) -> Reply:
    """An answer stopped by the window (or by max_tokens, when completion_tokens is given): finish_reason length."""
    return {
        "kind": "answer",
        "content": text,
        "reasoning": reasoning,
        "tool_calls": [list(c) for c in calls],
        "finish_reason": "length",
        "completion_tokens": completion_tokens,
    }


def context_error() -> Reply:
    """HTTP 400 exceed_context_size_error, whatever the prompt's size."""
    return {"kind": "context_error"}


def parse_failure(*, old: bool = False, message: str | None = None) -> Reply:
    """HTTP 500: the answer was generated but the server could not parse it (older or newer message, or `message`).
    The prompt was processed first, so the cache and the counters move as for an answer."""
    text = message or (OLD_PARSE_MESSAGE if old else NEW_PARSE_MESSAGE)
    return {**http_error(500, "server_error", text), "processed": True}


def http_error(status: int, type_: str, message: str) -> Reply:
    return {"kind": "error", "status": status, "type": type_, "message": message}


def raw(body: dict[str, Any], status: int = 200) -> Reply:
    """A body exactly as given (one captured from the real server); its timings go into /metrics."""
    return {"kind": "raw", "status": status, "body": body}


def raw_text(text: str, status: int = 200) -> Reply:
    """A body of exactly this text: not JSON, or JSON no dict can build (nested thousands deep, a lone surrogate)."""
    return {"kind": "raw_text", "status": status, "text": text}


def loading() -> Reply:
    return http_error(503, "unavailable_error", "Loading model")


def non_json() -> Reply:
    return {"kind": "non_json"}


def truncated_body() -> Reply:
    """A 200 whose body stops halfway through (Content-Length promises more)."""
    return {"kind": "truncated"}


def drop_connection() -> Reply:
    """Close the connection without answering."""
    return {"kind": "drop"}


def die() -> Reply:
    """Close the connection without answering, then stop serving: later connections are refused."""
    return {"kind": "die"}


def hang() -> Reply:
    """Never answer this request (until the double stops), while /health and /metrics go on answering: a server
    whose slot is stuck."""
    return {"kind": "hang"}
