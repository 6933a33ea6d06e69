"""The article's agent as a sandbox test starts it: the bench's settings, and the test's own flags after them."""

from __future__ import annotations

import json

from bench.agents.base import AgentCommand, AgentSettings
from bench.agents.kinds import agent_kind
from bench.config import BenchConfig


def article_run(*flags: str, config: BenchConfig | None = None, preset: str = "part3") -> AgentCommand:
    """`python -m agent` with `config`'s settings (the defaults when None), then `flags` (later flags win)."""
    config = config or BenchConfig()
    settings = AgentSettings(
        preset=preset,
        ctx=config.ctx[0],
        max_steps=config.max_steps or 30,
        keep=config.keep,
        clear_at=config.clear_at,
        sampling=json.dumps(config.sampling, sort_keys=True),
        retries=config.agent_retries,
        retry_delay_s=config.agent_retry_delay_s,
        request_timeout_s=config.request_timeout_s,
        jeff_timeout_s=config.jeff_timeout_s,
        jeff_steps=config.jeff_steps,
    )
    return AgentCommand(agent_kind("article"), settings, flags)
