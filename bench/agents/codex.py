"""Codex CLI (npm `@openai/codex`, pinned) as the kind `codex`: OpenAI's agent, which speaks only the Responses API
(its chat-completions wire API is gone), which llama-server serves at /v1/responses.

The npm package is a launcher; the agent is one static executable in the platform package
(`@openai/codex-linux-x64`), which this kind starts directly: no Node.js at run time. Headless: `codex exec` on the
task's text in the repository, with a provider of its own, `flint`, at the recording proxy (Responses wire API), the
run's window as its context window and auto-compaction at 90% of it, no approvals and none of its own sandboxing (the
bench's sandbox holds it), no update check, plugins or analytics, any other HTTP(S) sent to a closed port; its state
under the out folder.

Done: it ended its session itself (exit status 0).
"""

from __future__ import annotations

import platform

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, only_the_model
from bench.agents.npm_start import no_native_build, start

VERSION = "0.169.0"
PACKAGE = f"@openai/codex@{VERSION}"
TARGETS = {"x86_64": ("x64", "x86_64"), "aarch64": ("arm64", "aarch64")}


def executable(installed: str) -> str:
    arch, triple = TARGETS.get(platform.machine().lower(), ("x64", "x86_64"))
    return f"{installed}/node_modules/@openai/codex-linux-{arch}/vendor/{triple}-unknown-linux-musl/bin/codex"


def unavailable() -> str | None:
    return no_native_build(PACKAGE, TARGETS)


def launch(place: Place, settings: AgentSettings) -> Launch:
    provider = f'{{name="flint",base_url="{place.flint_url}/v1",wire_api="responses"}}'
    config = {
        "model_provider": "flint",
        "model_providers.flint": provider,
        "model_context_window": str(settings.ctx),
        "model_auto_compact_token_limit": str(settings.ctx * 9 // 10),
        "check_for_update_on_startup": "false",
        # Its plugins fetch their catalogues from github.com, api.github.com and chatgpt.com at start (seen through a
        # logging HTTP proxy); analytics would report each turn's cost there.
        "features.plugins": "false",
        "analytics.enabled": "false",
    }
    flags = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-m", "flint"]
    for key, value in config.items():
        flags += ["-c", f"{key}={value}"]
    env = {"CODEX_HOME": f"{place.out_dir}/codex-home", "HOME": f"{place.out_dir}/codex-home", **only_the_model(place)}
    return Launch(start(executable(place.installed), place.task_file, flags), env)


CODEX = AgentKind(
    name="codex",
    dialect="responses",
    done="it ended its session itself (exit status 0)",
    install=Install(npm=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    unavailable=unavailable,
    # Measured on Qwen2.5-Coder: 6,377 tokens with todo_repo's task (its instructions and tools about 5,700); below
    # it every request is a context 400
    min_ctx=(8192, "its first request alone is about 6,400 tokens: its instructions, tools and the task"),
    real_run="real runs: bench run --agents codex --ctx 8192 --max-steps 3 (docs/agents.md), ended by the step limit",
)
