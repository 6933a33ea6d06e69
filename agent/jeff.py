"""Jeff, the small model: a one-line opinion on each shell command before it runs.

Jeff never stops the run. When his server fails, the opinion is None and the error says why; with
`--approve jeff` that counts as a no.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from agent import prompts
from agent.server import ChatClient, ServerError

MAX_TOKENS = 48  # one line
TIMEOUT_S = 10.0  # a silent Jeff costs this much per command, never more (--jeff-timeout)
OPINION_CHARS = 300


@dataclass(frozen=True)
class Opinion:
    text: str | None
    seconds: float
    usage: dict[str, Any] | None
    timings: dict[str, Any] | None
    error: str | None


class Jeff:
    def __init__(self, base_url: str, timeout: float = TIMEOUT_S) -> None:
        self.url = base_url
        self.client = ChatClient(base_url, timeout=timeout, retries=0)

    def opinion(self, command: str) -> Opinion:
        started = time.monotonic()
        body = {
            "messages": [
                {"role": "system", "content": prompts.JEFF_SYSTEM},
                {"role": "user", "content": prompts.jeff_question(command)},
            ],
            "max_tokens": MAX_TOKENS,
            "temperature": 0.0,
        }
        try:
            reply = self.client.chat(body)
        except ServerError as e:
            return Opinion(
                text=None, seconds=time.monotonic() - started, usage=None, timings=None, error=f"{e.type}: {e.message}"
            )
        line = first_line(reply.message.get("content"))
        error = None if line else "empty answer"
        return Opinion(
            text=line or None, seconds=time.monotonic() - started, usage=reply.usage, timings=reply.timings, error=error
        )


def first_line(content: object) -> str:
    if not isinstance(content, str):
        return ""
    lines = [line.strip() for line in content.strip().splitlines() if line.strip()]
    return lines[0][:OPINION_CHARS] if lines else ""


def says_yes(opinion: str | None) -> bool:
    """True when the opinion's first word is yes (any case, punctuation ignored)."""
    words = re.findall(r"[A-Za-z]+", opinion or "")
    return bool(words) and words[0].lower() == "yes"
