"""What the llama-server double answers, apart from HTTP: its queue of scripted replies, its prompt cache and
counters, and the documents of each endpoint (bench/testing/fake_llama.py serves them)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.testing.fake_prompt import (
    CHARS_PER_TOKEN,
    COUNTERS,
    build_message,
    common_prefix,
    count_tokens,
    make_timings,
    render_message,
    render_prompt,
)
from bench.testing.fake_replies import Reply, context_error, prose


class ScriptedServer:
    """The double's state: the replies still to serve, every request and answer, the slot's cache, the counters."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        n_ctx: int = 4096,
        default: Reply | None = None,
        build_info: str = "b11434-fake",
        model_path: str = "/models/fake-flint.gguf",
        supports_tool_calls: bool = True,
        metrics: bool = True,
        slot_save: bool = True,
        record: Path | None = None,
        reasoning_history: str = "all",
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.reasoning_history = reasoning_history  # all | last_turn
        self.default = default or prose("I have finished the task.")
        self.n_ctx = n_ctx
        self.build_info = build_info
        self.model_path = model_path
        self.supports_tool_calls = supports_tool_calls
        self.metrics_enabled = metrics
        self.slot_save = slot_save  # started with --slot-save-path: POST /slots/0?action=erase works
        self.record = record
        self.requests: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # every 200 chat completion served, in order
        self.hits: list[tuple[str, str]] = []
        self.counters = dict.fromkeys(COUNTERS, 0.0)
        self.cached_text = ""  # what the slot holds: the last prompt and its answer, rendered
        self.vocabulary: dict[str, int] = {}
        self.lock = threading.Lock()

    def add(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    # What the endpoints answer

    def props(self) -> dict[str, Any]:
        return {
            "default_generation_settings": {"params": {"temperature": 0.8, "n_predict": -1}, "n_ctx": self.n_ctx},
            "total_slots": 1,
            "model_alias": Path(self.model_path).name,
            "model_path": self.model_path,
            "modalities": {"vision": False, "video": False, "audio": False},
            "chat_template": "{{ messages }}",
            "chat_template_caps": {"supports_tool_calls": self.supports_tool_calls, "supports_system_role": True},
            "bos_token": "<|im_start|>",
            "eos_token": "<|im_end|>",
            "build_info": self.build_info,
            "is_sleeping": False,
        }

    def metrics_text(self) -> str:
        lines = []
        for name, kind in COUNTERS.items():
            lines += [f"# HELP llamacpp:{name} {name}", f"# TYPE llamacpp:{name} {kind}"]
            lines.append(f"llamacpp:{name} {self.counters[name]:g}")
        return "\n".join(lines) + "\n"

    def next_reply(self, body: dict[str, Any]) -> tuple[Reply, int]:
        """The reply for this request and the prompt size; an oversized prompt is refused without using the queue."""
        with self.lock:
            self.requests.append(body)
            if self.record is not None:
                with open(self.record, "a", encoding="utf-8") as f:
                    f.write(json.dumps(body) + "\n")
            prompt_tokens = count_tokens(self.render(body))
            if prompt_tokens >= self.n_ctx:
                return context_error(), prompt_tokens
            return (self.replies.popleft() if self.replies else self.default), prompt_tokens

    def answer(self, reply: Reply, body: dict[str, Any], prompt_tokens: int) -> dict[str, Any]:
        """A chat completion for a scripted answer, with usage and timings from the prompt-cache model."""
        prompt_text = self.render(body)
        message = build_message(reply)
        answer_text = render_message(message)
        completion = reply.get("completion_tokens") or max(1, count_tokens(answer_text))
        finish = reply.get("finish_reason") or ("tool_calls" if message.get("tool_calls") else "stop")
        if finish == "length" and reply.get("completion_tokens") is None:
            completion = max(1, self.n_ctx - prompt_tokens)  # the answer ran to the end of the window
        with self.lock:
            if reply.get("forget"):
                self.cached_text = ""
            cache_n = min(common_prefix(self.cached_text, prompt_text) // CHARS_PER_TOKEN, prompt_tokens - 1)
            self.cached_text = prompt_text + answer_text
            timings = make_timings(cache_n, prompt_tokens - cache_n, completion, float(reply.get("compute_s") or 0))
            self.count(timings)
        usage = {
            "completion_tokens": completion,
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion,
            "prompt_tokens_details": {"cached_tokens": cache_n},
        }
        usage, timings = reply.get("usage", usage), reply.get("timings", timings)  # a hostile server's, if scripted
        response = {
            "choices": [{"finish_reason": finish, "index": 0, "message": message}],
            "created": int(time.time()),
            "model": Path(self.model_path).name,
            "system_fingerprint": self.build_info,
            "object": "chat.completion",
            "usage": usage,
            "id": f"chatcmpl-fake{len(self.requests)}",
            "timings": timings,
        }
        self.responses.append(response)
        return response

    def render(self, body: dict[str, Any]) -> str:
        """The prompt of a chat request, as this fake's template renders it."""
        return render_prompt(body, self.reasoning_history)

    def tokenize(self, text: str) -> list[int]:
        """One token per CHARS_PER_TOKEN characters; equal pieces are equal tokens."""
        with self.lock:
            pieces = [text[i : i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]
            return [self.vocabulary.setdefault(piece, len(self.vocabulary)) for piece in pieces]

    def count(self, timings: dict[str, Any]) -> None:
        self.counters["prompt_tokens_total"] += timings["prompt_n"]
        self.counters["prompt_tokens_cached_total"] += timings["cache_n"]
        self.counters["prompt_seconds_total"] += timings["prompt_ms"] / 1000
        self.counters["tokens_predicted_total"] += timings["predicted_n"]
        self.counters["tokens_predicted_seconds_total"] += timings["predicted_ms"] / 1000
        self.counters["n_decode_total"] += 1 + timings["predicted_n"]
        # b11434 counts what a slot holds after each decode: an answer's last token is sampled, never decoded
        held = timings["cache_n"] + timings["prompt_n"] + max(timings["predicted_n"] - 1, 0)
        self.counters["n_tokens_max"] = max(self.counters["n_tokens_max"], held)

    def processed_unparsed(self, body: dict[str, Any], prompt_tokens: int) -> None:
        """A parse failure still processed the prompt and generated tokens: the counters and the cache move."""
        prompt_text = self.render(body)
        with self.lock:
            cache_n = min(common_prefix(self.cached_text, prompt_text) // CHARS_PER_TOKEN, prompt_tokens - 1)
            self.cached_text = prompt_text
            self.count(make_timings(cache_n, prompt_tokens - cache_n, 32))
