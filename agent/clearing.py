"""Clearing old material from the conversation so the window has room again (DESIGN.md §3.2).

Everything older than the newest `keep` tool results is thinned out in place: tool results become a placeholder
that says how long they were and which tool gives them back; old reasoning is dropped; the file text inside old
write_file/edit_file calls becomes its length (the file on disk still has it). No message is removed or moved, so
every tool call keeps its result and the history stays valid for the server. A second clearing changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from agent import prompts

Message = dict[str, Any]

FILE_TEXT_ARGS = ("content", "old", "new")
WRITING_TOOLS = ("write_file", "edit_file")


def clear_old(messages: list[Message], keep: int) -> int:
    """Clear everything before the newest `keep` tool results, in place. Returns how many messages changed."""
    tool_positions = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if len(tool_positions) <= keep:
        return 0
    boundary = tool_positions[-keep] if keep > 0 else len(messages)
    tool_names = _tool_names_by_call_id(messages)
    return sum(_clear_message(m, tool_names) for m in messages[:boundary])


def is_placeholder(text: object) -> bool:
    return isinstance(text, str) and text.startswith(prompts.CLEARED_MARK) and text.endswith("]") and "\n" not in text


def _tool_names_by_call_id(messages: list[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            names[str(call.get("id"))] = str(call.get("function", {}).get("name"))
    return names


def _clear_message(message: Message, tool_names: dict[str, str]) -> bool:
    if message.get("role") == "tool":
        return _clear_tool_result(message, tool_names)
    if message.get("role") == "assistant":
        dropped_reasoning = message.pop("reasoning_content", None) is not None
        cleared_args = [_clear_call_arguments(call) for call in message.get("tool_calls") or []]
        return dropped_reasoning or any(cleared_args)
    return False


def _clear_tool_result(message: Message, tool_names: dict[str, str]) -> bool:
    content = message.get("content")
    if not isinstance(content, str) or is_placeholder(content):
        return False
    tool = tool_names.get(str(message.get("tool_call_id")), "the tool")
    message["content"] = prompts.cleared_tool_result(tool, len(content))
    return True


def _clear_call_arguments(call: dict[str, Any]) -> bool:
    function = call.get("function") or {}
    if function.get("name") not in WRITING_TOOLS:
        return False
    try:
        args = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        return False
    if not isinstance(args, dict):
        return False
    changed = False
    for key in FILE_TEXT_ARGS:
        value = args.get(key)
        if isinstance(value, str) and not is_placeholder(value):
            args[key] = prompts.cleared_argument(len(value))
            changed = True
    if changed:
        function["arguments"] = json.dumps(args)
    return changed
