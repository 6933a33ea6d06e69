"""Claude Code (npm `@anthropic-ai/claude-code`, pinned) as the kind `claude-code`: Anthropic's agent, which speaks
the Messages API, which llama-server serves at /v1/messages.

The npm package's platform package (`@anthropic-ai/claude-code-linux-x64`) carries one executable (its own
runtime inside), which this kind starts directly. Headless:
`claude -p TASK` in the repository with every tool allowed (`--dangerously-skip-permissions`; IS_SANDBOX says it is
contained, as the bench's sandbox does), at most max_steps turns, the model `flint` at the recording proxy
(ANTHROPIC_BASE_URL) for its main and its small side requests alike, its model's window the run's ctx (its
auto-compaction window follows) and its answer limit min(2048, ctx/4); no telemetry, error reports, update checks or
other traffic of its own, any other HTTP(S) sent to a closed port; its home under the out folder.

Done: it ended its session itself (exit status 0).
"""

from __future__ import annotations

import platform

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, answer_limit, only_the_model
from bench.agents.npm_start import no_native_build, start

VERSION = "2.1.328"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"
TARGETS = {"x86_64": "x64", "aarch64": "arm64"}


def executable(installed: str) -> str:
    """The platform package's executable: the main package's bin/claude.exe is a stub its install script would
    replace with it, and the bench runs no install script."""
    arch = TARGETS.get(platform.machine().lower(), "x64")
    return f"{installed}/node_modules/@anthropic-ai/claude-code-linux-{arch}/claude"


def unavailable() -> str | None:
    return no_native_build(PACKAGE, TARGETS)


def launch(place: Place, settings: AgentSettings) -> Launch:
    flags = ["-p", "--model", "flint", "--dangerously-skip-permissions", "--max-turns", str(settings.max_steps)]
    env = {
        "ANTHROPIC_BASE_URL": place.flint_url,
        "ANTHROPIC_API_KEY": "none",
        "ANTHROPIC_SMALL_FAST_MODEL": "flint",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "flint",
        # A model name it does not know is taken for a 200K (or 1M) window: this gives it the run's, and its
        # auto-compaction window is clamped to it. (CLAUDE_CODE_AUTO_COMPACT_WINDOW cannot: it reads any value under
        # 100K as 100K, and says so.)
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(settings.ctx),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(answer_limit(settings.ctx)),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "IS_SANDBOX": "1",
        "HOME": f"{place.out_dir}/claude-home",
        **only_the_model(place),
    }
    return Launch(start(executable(place.installed), place.task_file, flags), env)


CLAUDE_CODE = AgentKind(
    name="claude-code",
    dialect="messages",
    done="it ended its session itself (exit status 0)",
    install=Install(npm=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    unavailable=unavailable,
    # Measured on Qwen2.5-Coder: 12,248 tokens with todo_repo's task (its system prompt and twelve tools); below it
    # every request is refused
    min_ctx=(16384, "its first request alone is about 12,200 tokens: its system prompt, tools and the task"),
    real_run=(
        "real runs: bench run --agents claude-code --ctx 16384 --max-steps 2 (docs/agents.md), ended by the step limit;"
        " its 12,248-token first prompt is about 10 min of prefill on two cores"
    ),
)
