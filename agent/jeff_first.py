"""The small model first: presets jeff-first and jeff-gate (docs/agent.md, Presets).

jeff-first  Jeff acts with the same conversation and tools as Flint for up to K steps (--jeff-steps, 3 unless
            given), then hands over to Flint for good: at K, or earlier when he says so (an answer without a tool
            call), when his answer is cut, or when his server fails (his window too small for the conversation).
jeff-gate   each step Jeff first sees a short state (the task's start and the newest message's) and says who takes
            the step; when he says jeff, he acts as in jeff-first, and a step he cannot take goes to Flint.

Each time a step goes to Flint because of Jeff is an escalation (the trace's `escalate` event); each of Jeff's
actions is a `jeff_step` event with his server's usage and timings. Jeff's requests never enter Flint's request log:
Flint's prompt cache never saw them, and its first request after a handover is computed cold.
"""

from __future__ import annotations

import re
import time
from typing import Any

from agent import prompts
from agent.server import ChatClient, Reply, ServerError

STATE_CHARS = 300  # of the task, and of the newest message, in jeff-gate's short state
GATE_TOKENS = 8  # the gate's answer: one word


class JeffActor:
    """Jeff acting instead of Flint; `mode` is first or gate."""

    def __init__(self, client: ChatClient, mode: str, limit: int) -> None:
        self.client = client
        self.mode = mode
        self.limit = limit  # jeff-first: his steps before Flint takes over (K)
        self.steps = 0
        self.handed_over = False

    def takes(self, agent: Any) -> bool:
        """Whether Jeff took this step of `agent` (agent/loop.py's Agent); False: Flint is asked."""
        if self.handed_over:
            return False
        if self.mode == "first" and self.steps >= self.limit:
            return self.escalate(agent, "steps")
        if self.mode == "gate" and not self.gate_says_jeff(agent):
            return self.escalate(agent, "gate")
        started = time.monotonic()
        try:
            reply = self.client.chat(agent.request_body())
        except ServerError as e:
            self.report(agent, None, started, f"{e.type}: {e.message}")
            return self.escalate(agent, "jeff_error")
        self.report(agent, reply, started, None)
        if reply.finish_reason == "length":
            return self.escalate(agent, "cut")
        if not reply.message.get("tool_calls"):
            return self.escalate(agent, "jeff_said")
        self.steps += 1
        agent.handle_answer(reply)
        return True

    def gate_says_jeff(self, agent: Any) -> bool:
        body = {
            "messages": [
                {"role": "system", "content": prompts.JEFF_GATE_SYSTEM},
                {"role": "user", "content": short_state(agent.messages)},
            ],
            "max_tokens": GATE_TOKENS,
            "temperature": 0.0,
        }
        started = time.monotonic()
        try:
            reply = self.client.chat(body)
        except ServerError as e:
            self.report(agent, None, started, f"{e.type}: {e.message}", kind="gate")
            return False
        self.report(agent, reply, started, None, kind="gate")
        words = re.findall(r"[A-Za-z]+", str(reply.message.get("content") or ""))
        return bool(words) and words[0].lower() == "jeff"

    def escalate(self, agent: Any, reason: str) -> bool:
        """Flint takes this step (and, in jeff-first, every later one)."""
        self.handed_over = self.mode == "first"
        agent.trace.emit("escalate", step=agent.step, reason=reason, jeff_steps=self.steps)
        return False

    def report(self, agent: Any, reply: Reply | None, started: float, error: str | None, kind: str = "act") -> None:
        message = reply.message if reply else {}
        agent.trace.emit(
            "jeff_step",
            step=agent.step,
            kind=kind,
            usage=reply.usage if reply else None,
            timings=reply.timings if reply else None,
            finish_reason=reply.finish_reason if reply else None,
            tool_calls=len(message.get("tool_calls") or []),
            seconds=round(time.monotonic() - started, 3),
            error=error,
        )


def short_state(messages: list[dict[str, Any]]) -> str:
    """jeff-gate's view of the run: the task's start and the newest message's."""
    task = str(messages[1].get("content") or "")[:STATE_CHARS]
    newest = messages[-1]
    text = str(newest.get("content") or "")[-STATE_CHARS:]
    return prompts.jeff_gate_question(task, str(newest.get("role")), text, len(messages))
