"""Clearing old material from the conversation so the window has room again (presets: docs/agent.md).

`clear_old` is the article's (Part 3): everything older than the newest `keep` tool results is thinned out in place.
Tool results become "[cleared to save context: N characters. Call the tool again if you need it.]"; old reasoning is
dropped; the `content`/`old`/`new` arguments of old calls become "[cleared: N characters]" (the file on disk still
has them). Anything that already starts with "[cleared" is left alone. No message is removed or moved, so every
tool call keeps its result and the history stays valid for the server. A second clearing changes nothing.

part3+ and strict add two things: the output of older failed done checks is cleared as well (the newest is kept),
and `RequestEstimate` says how big the next request will be, so that clearing can happen before it is sent.

`Clearing(room_only=True)` (part3+, strict, late and the summary presets) replaces only what its placeholder makes
smaller: the article's placeholder (77 characters) is longer than a short tool error, and clearing that saves
nothing still makes the server compute the rest of the conversation again. The article's presets clear as it did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent import prompts

Message = dict[str, Any]

FILE_TEXT_ARGS = ("content", "old", "new")
# Characters per token for text added since the last answer. Code and English run about 3.5 to 4 characters per
# token with the usual tokenizers; 3 overestimates the added text a little, so clearing comes slightly early rather
# than a request going out past the threshold.
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class Clearing:
    """How old material is replaced: the article's way (every old result, whatever its size), or only where the
    placeholder is shorter (`room_only`); `tool_placeholder` words a cleared tool result (the summary presets' own)."""

    room_only: bool = False
    tool_placeholder: Callable[[int], str] = prompts.cleared_tool_result

    def replaces(self, text: str, placeholder: str) -> bool:
        return not is_placeholder(text) and not (self.room_only and len(placeholder) >= len(text))


ARTICLE = Clearing()
ROOM_ONLY = Clearing(room_only=True)


def clear_old(messages: list[Message], keep: int, done_outputs: Sequence[int] = (), how: Clearing = ARTICLE) -> int:
    """Clear before the newest `keep` tool results (and, for part3+, all but the newest done-check output at the
    positions `done_outputs`), in place. Returns how many messages changed."""
    changed = 0
    for position in clear_boundary_positions(messages, keep):
        changed += _clear_message(messages[position], how)
    for position in list(done_outputs)[:-1]:
        changed += _clear_done_output(messages[position], how)
    return changed


def clear_boundary_positions(messages: list[Message], keep: int) -> range:
    """The positions a clearing looks at: everything before the newest `keep` tool results (none when there are
    no more than `keep`)."""
    tool_positions = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if len(tool_positions) <= keep:
        return range(0)
    return range(tool_positions[-keep] if keep > 0 else len(messages))


def is_placeholder(text: object) -> bool:
    return isinstance(text, str) and text.startswith(prompts.CLEARED_MARK)


def _clear_message(message: Message, how: Clearing) -> bool:
    """The article's clearing of one message; True when it changed (as the article's json.dumps comparison says)."""
    content = message.get("content")
    if message.get("role") == "tool" and isinstance(content, str):
        placeholder = how.tool_placeholder(len(content))
        if not how.replaces(content, placeholder):
            return False
        message["content"] = placeholder
        return True
    if message.get("role") != "assistant":
        return False
    changed = message.pop("reasoning_content", None) is not None  # old thinking
    for call in message.get("tool_calls") or []:  # file text the model wrote: the file itself still has it
        changed = _clear_call_arguments(call.get("function") or {}, how) or changed
    return changed


def _clear_call_arguments(function: dict[str, Any], how: Clearing) -> bool:
    before = function.get("arguments")
    try:
        args = json.loads(before or "{}")
    except (TypeError, ValueError):
        return False
    if not isinstance(args, dict):
        return False
    replaced = False
    for key in FILE_TEXT_ARGS:
        value = args.get(key)
        if isinstance(value, str) and how.replaces(value, prompts.cleared_argument(len(value))):
            args[key] = prompts.cleared_argument(len(value))
            replaced = True
    if how.room_only and not replaced:
        return False  # nothing made smaller: the arguments stay byte for byte as sent
    function["arguments"] = json.dumps(args)  # as the article did: old arguments are written back re-serialized
    return bool(function["arguments"] != before)


def _clear_done_output(message: Message, how: Clearing) -> bool:
    content = message.get("content")
    if not isinstance(content, str) or not how.replaces(content, prompts.cleared_test_output(len(content))):
        return False
    message["content"] = prompts.cleared_test_output(len(content))
    return True


def conversation_chars(messages: list[Message]) -> int:
    """The characters of text in the conversation: contents, reasoning, and tool-call names and arguments."""
    total = 0
    for m in messages:
        total += len(str(m.get("content") or "")) + len(str(m.get("reasoning_content") or ""))
        for call in m.get("tool_calls") or []:
            function = call.get("function") or {}
            total += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return total


class RequestEstimate:
    """The tokens of the next request: the server's count at the last answer, plus what was added (or cleared)
    since, converted at CHARS_PER_TOKEN. Unknown (None) before the first answer."""

    def __init__(self) -> None:
        self.tokens: int | None = None
        self.chars = 0

    def measured(self, tokens: int | None, messages: list[Message]) -> None:
        """The server counted `tokens` for the conversation as it is now (`messages`); None: it did not say."""
        if tokens is not None:
            self.tokens, self.chars = tokens, conversation_chars(messages)

    def tokens_for(self, messages: list[Message]) -> int | None:
        if self.tokens is None:
            return None
        return self.tokens + math.ceil((conversation_chars(messages) - self.chars) / CHARS_PER_TOKEN)
