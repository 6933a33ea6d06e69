"""How the llama-server double (bench/testing/fake_llama.py) counts: a fixed rendering of a chat request standing
in for the chat template, one token per CHARS_PER_TOKEN characters, the prompt cache as the longest common prefix,
timings at a fixed speed, and the /metrics counters they add up to."""

from __future__ import annotations

import json
import math
from typing import Any

from bench.testing.fake_replies import Reply

CHARS_PER_TOKEN = 4

COUNTERS = {
    "prompt_tokens_total": "counter",
    "prompt_seconds_total": "counter",
    "prompt_tokens_cached_total": "counter",
    "tokens_predicted_total": "counter",
    "tokens_predicted_seconds_total": "counter",
    "n_decode_total": "counter",
    "n_tokens_max": "counter",
    "requests_processing": "gauge",
    "requests_deferred": "gauge",
}


def make_timings(cache_n: int, prompt_n: int, predicted_n: int, compute_s: float = 0.0) -> dict[str, Any]:
    # A fixed speed, fast enough that an instant fake never reports more server time than the wall clock saw; a
    # reply's scripted compute_s (slept before it is sent) is decode time.
    prompt_ms, predicted_ms = prompt_n * 0.001, predicted_n * 0.01 + compute_s * 1000
    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n,
        "prompt_per_second": 1000 * prompt_n / prompt_ms,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / predicted_n,
        "predicted_per_second": 1000 * predicted_n / predicted_ms,
    }


def build_message(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or ""}
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    calls = []
    for i, (name, args) in enumerate(reply.get("tool_calls") or []):
        arguments = args if isinstance(args, str) else json.dumps(args)
        calls.append({"type": "function", "function": {"name": name, "arguments": arguments}, "id": f"fc_{i}_{name}"})
    if calls:
        message["tool_calls"] = calls
    return message


def render_message(message: dict[str, Any], reasoning: bool = True) -> str:
    """A fixed rendering, standing in for the chat template: same messages, same text."""
    text = f"<|{message.get('role')}|>"
    if reasoning and message.get("reasoning_content"):
        text += f"<think>{message['reasoning_content']}</think>"
    text += str(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        text += f"<tool_call>{function.get('name')} {function.get('arguments')}</tool_call>"
    return _whole_tokens(text + "<|end|>")


def _whole_tokens(text: str) -> str:
    """Padded to whole tokens, so that messages start on a token boundary (as special tokens make them do)."""
    return text + " " * (-len(text) % CHARS_PER_TOKEN)


def render_prompt(body: dict[str, Any], reasoning_history: str = "all") -> str:
    tools = json.dumps(body.get("tools") or [])
    messages = body.get("messages") or []
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    shown_from = users[-1] if reasoning_history == "last_turn" and users else 0  # reasoning kept after it only
    head = _whole_tokens(f"<|tools|>{tools}")
    return head + "".join(render_message(m, i >= shown_from) for i, m in enumerate(messages))


def count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
