"""Clearing old material from the conversation so the window has room again (presets: docs/agent.md).

`clear_old` is the article's (Part 3): everything older than the newest `keep` tool results is thinned out in place.
Tool results become "[cleared to save context: N characters. Call the tool again if you need it.]"; old reasoning is
dropped; the `content`/`old`/`new` arguments of old calls become "[cleared: N characters]" (the file on disk still
has them). Anything that already starts with "[cleared" is left alone. No message is removed or moved, so every
tool call keeps its result and the history stays valid for the server. A second clearing changes nothing.

part3+ and strict add two things: the output of older failed done checks is cleared as well (the newest is kept),
and `RequestEstimate` says how big the next request will be, so that clearing can happen before it is sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from agent import prompts

Message = dict[str, Any]

FILE_TEXT_ARGS = ("content", "old", "new")
# Characters per token for text added since the last answer. Code and English run about 3.5 to 4 characters per
# token with the usual tokenizers; 3 overestimates the added text a little, so clearing comes slightly early rather
# than a request going out past the threshold.
CHARS_PER_TOKEN = 3


def clear_old(messages: list[Message], keep: int, done_outputs: Sequence[int] = ()) -> int:
    """Clear before the newest `keep` tool results (and, for part3+, all but the newest done-check output at the
    positions `done_outputs`), in place. Returns how many messages changed."""
    changed = 0
    tool_positions = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if len(tool_positions) > keep:
        boundary = tool_positions[-keep] if keep > 0 else len(messages)
        changed += sum(_clear_message(m) for m in messages[:boundary])
    for position in list(done_outputs)[:-1]:
        changed += _clear_done_output(messages[position])
    return changed


def is_placeholder(text: object) -> bool:
    return isinstance(text, str) and text.startswith(prompts.CLEARED_MARK)


def _clear_message(message: Message) -> bool:
    """The article's clearing of one message; True when it changed (as the article's json.dumps comparison says)."""
    content = message.get("content")
    if message.get("role") == "tool" and isinstance(content, str) and not is_placeholder(content):
        message["content"] = prompts.cleared_tool_result(len(content))
        return True
    if message.get("role") != "assistant":
        return False
    changed = message.pop("reasoning_content", None) is not None  # old thinking
    for call in message.get("tool_calls") or []:  # file text the model wrote: the file itself still has it
        changed = _clear_call_arguments(call.get("function") or {}) or changed
    return changed


def _clear_call_arguments(function: dict[str, Any]) -> bool:
    before = function.get("arguments")
    try:
        args = json.loads(before or "{}")
    except (TypeError, ValueError):
        return False
    if not isinstance(args, dict):
        return False
    for key in FILE_TEXT_ARGS:
        value = args.get(key)
        if isinstance(value, str) and not is_placeholder(value):
            args[key] = prompts.cleared_argument(len(value))
    function["arguments"] = json.dumps(args)  # as the article did: old arguments are written back re-serialized
    return bool(function["arguments"] != before)


def _clear_done_output(message: Message) -> bool:
    content = message.get("content")
    if not isinstance(content, str) or is_placeholder(content):
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
