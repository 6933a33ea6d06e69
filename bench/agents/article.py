"""The article's agent (agent/) as the kind `article`: its one command line, and everything else the bench takes
from it.

This is the one bench module that imports agent/: the presets and the window estimate of its first prompt, the
clearing the replay re-runs, its reading of /props (which the bench shares, so both read a server's window alike),
its rule for test files, and its version (a hash of its source).
"""

from __future__ import annotations

import functools
from pathlib import Path

import agent
from agent import prompts
from agent.clearing import ARTICLE as ARTICLE_CLEARING
from agent.clearing import CHARS_PER_TOKEN, RequestEstimate, clear_old, conversation_chars
from agent.clearing import ROOM_ONLY as ROOM_ONLY_CLEARING
from agent.command_user import ENV as COMMAND_USER_ENV
from agent.presets import PRESETS, Preset
from agent.prompts import SYSTEM_PROMPT, TOOL_SPECS
from agent.requests import RequestLog, common_prefix
from agent.server import Props, SetupError, props_from
from agent.summary import SUMMARY_AT, propose_replacing, with_summary
from agent.tools import is_test_file
from agent.trace import agent_version
from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place

# Where the agent package lives (a checkout, or site-packages once installed): the agent's Python finds it there.
AGENT_HOME = Path(agent.__file__).resolve().parent.parent

__all__ = [
    "AGENT_HOME",
    "ARTICLE",
    "ARTICLE_CLEARING",
    "CHARS_PER_TOKEN",
    "ROOM_ONLY_CLEARING",
    "SUMMARY_AT",
    "prompts",
    "propose_replacing",
    "with_summary",
    "COMMAND_USER_ENV",
    "PRESETS",
    "SYSTEM_PROMPT",
    "TOOL_SPECS",
    "Preset",
    "Props",
    "RequestEstimate",
    "RequestLog",
    "SetupError",
    "clear_old",
    "common_prefix",
    "conversation_chars",
    "is_test_file",
    "props_from",
]

EVENTS_FILE = "events.jsonl"  # the agent's trace in the out folder (bench.measure.trace.TRACE_FILE)


def launch(place: Place, settings: AgentSettings) -> Launch:
    """`python -m agent` on the task (docs/agent.md, Running the agent), with the run's preset and settings; the
    window it reads from the server itself."""
    jeff = ["--jeff", place.jeff_url] if place.jeff_url else ["--no-jeff"]
    argv = [place.python, "-m", "agent", "--repo", place.repo, "--task-file", place.task_file]
    argv += ["--events", f"{place.out_dir}/{EVENTS_FILE}", "--flint", place.flint_url, *jeff]
    argv += ["--preset", settings.preset, "--max-steps", str(settings.max_steps)]
    argv += ["--keep", str(settings.keep), "--clear-at", str(settings.clear_at), "--approve", "yes"]
    argv += ["--sampling", settings.sampling, "--retries", str(settings.retries)]
    argv += ["--retry-delay", str(settings.retry_delay_s), "--request-timeout", str(settings.request_timeout_s)]
    argv += ["--jeff-timeout", str(settings.jeff_timeout_s), "--jeff-steps", str(settings.jeff_steps)]
    argv += ["--test-command", settings.test_command] if settings.test_command else []
    argv += ["--test-patterns", *settings.test_patterns] if settings.test_command and settings.test_patterns else []
    env = {COMMAND_USER_ENV: place.command_user} if place.command_user else {}
    return Launch(argv, env)


ARTICLE = AgentKind(
    name="article",
    dialect="chat-completions",
    done="its done check passed: the repository's tests (the preset's check, docs/agent.md)",
    install=Install(),  # agent/ is in the sandbox image itself (docker/sandbox.Dockerfile)
    version=functools.cache(lambda: agent_version()),  # read once a bench
    launch=launch,
    own_trace=True,
    forced_tools=True,
    presets=tuple(PRESETS),
    real_run="real runs: make test (tests/integration/test_agent_real_llama.py) and every bench",
)
