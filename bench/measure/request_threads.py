"""Which conversation each of an agent's model requests belongs to, read from the request bodies the recording proxy
logged (docker/record_proxy.py): the agent's main thread, a side request (a title, a summary, a commit message) or a
sub-agent.

A request's signature is the tools it offers (their names), or, when it offers none, its system prompt: an agent keeps
both for its whole main conversation, while its side requests and sub-agents are asked with other ones. The first
request that offers tools is the main thread's (a sub-agent is started from it, and may then ask more often: Claude
Code's asked 26 times to its main thread's 2); where none offers tools (aider), the signature most requests share (the
earliest among equals). Another signature that offers tools is a sub-agent's, one without tools a side request's; so the
recording proxy's step limit counts (docker/record_proxy.py). Each dialect keeps them in its own place: chat completions
in the system or developer message, Messages in `system`, Responses in `instructions`.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

ROLES = ("main", "side", "subagent")


def _text(value: Any) -> str:
    """A system prompt's text: a string, or the text of a list of content blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(block.get("text")) if isinstance(block, dict) else _text(block) for block in value)
    return ""


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return ""
    function = tool.get("function")
    return str(function.get("name") if isinstance(function, dict) else tool.get("name") or tool.get("type") or "")


def system_prompt(body: Any) -> str:
    """The instructions the request opens with, in any of the three dialects."""
    if not isinstance(body, dict):
        return ""
    if "system" in body or "instructions" in body:
        return _text(body.get("system") or body.get("instructions"))
    messages = body.get("messages")
    if isinstance(messages, list):
        return "\n".join(
            _text(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") in ("system", "developer")
        )
    return ""


def signature(body: Any) -> str:
    """What a conversation keeps from request to request: its tools' names, or its system prompt."""
    tools = body.get("tools") if isinstance(body, dict) else None
    if isinstance(tools, list) and tools:
        return json.dumps(["tools", sorted(_tool_name(tool) for tool in tools)])
    return json.dumps(["system", system_prompt(body)])


def offers_tools(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("tools"), list) and bool(body["tools"])


def _most_used(signatures: list[str]) -> str:
    """The signature most requests share, the earliest among equals."""
    counts = Counter(signatures)
    most = max(counts.values())
    return next(s for s in signatures if counts[s] == most)


def threads(bodies: list[Any]) -> list[tuple[str, str]]:
    """(role, signature) of each request body, in order: main, side or subagent (ROLES)."""
    signatures = [signature(body) for body in bodies]
    if not signatures:
        return []
    with_tools = [sig for body, sig in zip(bodies, signatures, strict=True) if offers_tools(body)]
    main = with_tools[0] if with_tools else _most_used(signatures)
    found = []
    for body, sig in zip(bodies, signatures, strict=True):
        role = "main" if sig == main else "subagent" if offers_tools(body) else "side"
        found.append((role, sig))
    return found
