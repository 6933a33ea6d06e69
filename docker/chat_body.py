"""What a chat body may hold to pass the forwarder (docker/forward.py): what the agent sends, and nothing else.

`messages` (system, user, assistant and tool turns of text and tool calls), `tools` (a few small function schemas),
`tool_choice`, `stream: false`, `max_tokens` up to the server's window, and the run's sampling settings (exactly
those, when the forwarder is told them; without, the usual numeric ones in llama-server's ranges). A grammar,
`n_probs`, a JSON schema or any other field is refused with 400, which the agent reports as the server's refusal.

Standard library only, beside forward.py in the sandbox image and in compose.yaml's gates.
"""

from __future__ import annotations

import json
import math
from typing import Any

# What a chat body may hold: agent/loop.py's request_body and agent/jeff.py's opinion request.
CHAT_FIELDS = frozenset({"messages", "tools", "tool_choice", "stream", "max_tokens"})
MESSAGE_FIELDS = frozenset({"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"})
ROLES = frozenset({"system", "user", "assistant", "tool"})
MAX_MESSAGES = 4096
# Arrays and objects in one body, counted as brackets before parsing: what a parse can build is bounded by this (a
# body of empty lists would otherwise cost some 30 bytes of memory per byte), not by the body's length alone.
MAX_BRACKETS = 256 * 1024
MAX_TOOLS = 16
TOOLS_LIMIT = 32 * 1024  # bytes of the tools' JSON: the agent's six are about 1.5 KB
SCHEMA_DEPTH = 8
# Sampling settings taken when no --sampling names the run's: numbers in the ranges llama-server accepts.
DEFAULT_SAMPLING = {"temperature": (0, 5), "top_p": (0, 1), "min_p": (0, 1), "top_k": (0, 1000), "seed": (-1, 2**32)}


class Refused(Exception):
    """A request the forwarder answers itself: the HTTP status and reason, and the message its body carries."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


def bad(message: str) -> Refused:
    return Refused(400, "Bad Request", f"the forwarder passes only the agent's own requests: {message}")


def _depth(value: Any, limit: int) -> bool:
    """Whether `value` nests at most `limit` levels."""
    if limit < 0:
        return False
    if isinstance(value, dict):
        return all(_depth(v, limit - 1) for v in value.values())
    if isinstance(value, list):
        return all(_depth(v, limit - 1) for v in value)
    return True


def check_message(message: Any) -> None:
    if not isinstance(message, dict) or not set(message) <= MESSAGE_FIELDS or message.get("role") not in ROLES:
        raise bad("each message is an object with a role and text (or tool calls)")
    for key in ("content", "reasoning_content", "tool_call_id", "name"):
        if not isinstance(message.get(key, ""), str | type(None)):
            raise bad(f"a message's {key} must be text")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not (
            isinstance(function, dict)
            and set(call) <= {"id", "type", "function"}
            and set(function) <= {"name", "arguments"}
            and all(isinstance(v, str) for v in (*function.values(), call.get("id", ""), call.get("type", "")))
        ):
            raise bad("a tool call is an id, a type and a function's name and arguments, as text")


def check_tools(tools: Any) -> None:
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS or len(json.dumps(tools)) > TOOLS_LIMIT:
        raise bad(f"tools is a list of at most {MAX_TOOLS} functions in {TOOLS_LIMIT} bytes")
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not (
            isinstance(function, dict)
            and tool.get("type") == "function"
            and set(function) <= {"name", "description", "parameters"}
            and _depth(function.get("parameters", {}), SCHEMA_DEPTH)
        ):
            raise bad("each tool is a function with a name, a description and a small parameters schema")


def check_sampling(body: dict[str, Any], sampling: dict[str, Any] | None) -> None:
    extra = set(body) - CHAT_FIELDS
    if sampling is not None:
        if extra - set(sampling) or any(body[key] != sampling[key] for key in extra):
            raise bad(f"the run's sampling settings are {json.dumps(sampling, sort_keys=True)}; got others")
        return
    for key in sorted(extra):
        if key not in DEFAULT_SAMPLING:
            raise bad(f"{key!r} is not a field the agent sends")
        low, high = DEFAULT_SAMPLING[key]
        value = body[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise bad(f"{key} must be a number")
        if not low <= value <= high:
            raise bad(f"{key} must be between {low} and {high}")


def check_chat(raw: bytes, sampling: dict[str, Any] | None, window: int | None) -> dict[str, Any]:
    """The chat body, when it is one the agent sends; Refused(400) naming what is not. `window` bounds max_tokens
    (None: not known, so max_tokens is refused)."""
    if raw.count(b"[") + raw.count(b"{") > MAX_BRACKETS:
        raise bad(f"the body holds more than {MAX_BRACKETS} arrays and objects")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise bad("the body is not JSON") from None
    if not isinstance(body, dict):
        raise bad("the body is not a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not 1 <= len(messages) <= MAX_MESSAGES:
        raise bad(f"messages is a list of 1 to {MAX_MESSAGES} messages")
    for message in messages:
        check_message(message)
    if "tools" in body:
        check_tools(body["tools"])
    choice = body.get("tool_choice", "auto")
    if choice not in ("auto", "none", "required") and not (isinstance(choice, dict) and _depth(choice, 2)):
        raise bad("tool_choice is auto, none, required or a named function")
    if body.get("stream", False) is not False:
        raise bad("stream must be false")
    check_sampling(body, sampling)
    if "max_tokens" in body:
        tokens = body["max_tokens"]
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 1 <= tokens <= (window or 0):
            raise bad(f"max_tokens must be a whole number from 1 to the window ({window or 'unknown'} tokens)")
    return body
