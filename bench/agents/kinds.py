"""The agent kinds, by the name `agents:` takes (bench.yaml, `bench run --agents`).

A new agent is one module that makes an AgentKind (bench/agents/base.py; bench/testing/tiny_agent.py is a
whole one) and one line here.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.agents.aider import AIDER
from bench.agents.article import ARTICLE
from bench.agents.base import AgentKind
from bench.agents.claude_code import CLAUDE_CODE
from bench.agents.codex import CODEX
from bench.agents.install import is_installed, packages
from bench.agents.mini_swe import MINI_SWE
from bench.agents.opencode import OPENCODE
from bench.agents.pi import PI
from bench.agents.qwen_code import QWEN_CODE
from bench.errors import ConfigError

KINDS: dict[str, AgentKind] = {
    "article": ARTICLE,
    "mini-swe-agent": MINI_SWE,
    "aider": AIDER,
    "codex": CODEX,
    "claude-code": CLAUDE_CODE,
    "opencode": OPENCODE,
    "pi": PI,
    "qwen-code": QWEN_CODE,
}


def agent_kind(name: str) -> AgentKind:
    """The kind called `name`; any other name is an error listing the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        raise ConfigError(f"agents: {name!r} is not an agent kind; the kinds are {', '.join(KINDS)}") from None


def listing(kinds: Iterable[AgentKind]) -> list[str]:
    """One line a kind: name, version, dialect, `ready` or why it cannot run here, and its real runs so far."""
    lines = []
    for kind in kinds:
        why = kind.unavailable()
        try:
            version = kind.version()
        except Exception as e:  # noqa: BLE001 - a kind whose version cannot be read is listed, with why
            version, why = "?", why or f"its version cannot be read: {e}"
        ready = "ready" if is_installed(kind) else f"ready (installs {', '.join(packages(kind))} on first use)"
        ran = f"; {kind.real_run}" if kind.real_run else ""
        lines.append(f"{kind.name:<16} {version:<14} {kind.dialect:<17} {why or ready}{ran}")
    return lines


def refuse_unfit(name: str, ctx: int) -> None:
    """ConfigError, before anything runs, for a kind that cannot run here or cannot work in a window of ctx."""
    kind = agent_kind(name)
    why = kind.unavailable()
    if why:
        raise ConfigError(f"agents: {name} cannot run here: {why}; drop it from agents")
    smallest, because = kind.min_ctx
    if ctx < smallest:
        raise ConfigError(f"agents: {name} needs ctx >= {smallest} ({because}), not {ctx}: raise ctx or drop {name}")
