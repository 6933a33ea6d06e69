"""opencode (npm `opencode-ai`, pinned) as the kind `opencode`.

The npm package is a launcher; the agent itself is one self-contained executable in a package per platform
(`opencode-linux-x64`, and `-baseline` for processors without AVX2), which this kind starts directly: no Node.js at
run time, and no install script is run.

Headless: `opencode run --model flint/flint TASK` in the repository. Its configuration comes in
OPENCODE_CONFIG_CONTENT: one provider, `flint`, through opencode's OpenAI-compatible adapter at the recording proxy,
whose model has the run's window as its context limit (opencode compacts by it) and an answer limit of
min(2048, ctx/4); the run's sampling as the build agent's options, its step limit as the agent's `steps`; edits and
commands allowed, web fetches denied. Its network calls of its own (the models.dev catalogue, updates, LSP
downloads, plugins, sharing) are switched off, its background install of its plugin package fails closed (its
npm offline), and it reads and writes its state only under the run's folder.

Done: it ended the session itself (exit status 0).
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from bench.agents.base import CLOSED_PORT, AgentKind, AgentSettings, Install, Launch, Place, answer_limit

VERSION = "1.18.33"
PACKAGE = f"opencode-ai@{VERSION}"
MODEL = "flint/flint"
ARCHES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
# Off: every network call opencode makes on its own, and what it would read from the user's other agents.
OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}
# Starts opencode on the task file's text ($0 the executable, $1 the task file, the rest its flags).
RUN = 'task="$(cat "$1")"; exe="$0"; shift; exec "$exe" run "$@" "$task"'


def platform_package() -> str | None:
    """The platform package whose executable runs here, or None where opencode publishes none."""
    arch = ARCHES.get(platform.machine().lower())
    if platform.system() != "Linux" or arch is None:
        return None
    if arch == "x64" and "avx2" not in Path("/proc/cpuinfo").read_text():
        return "opencode-linux-x64-baseline"
    return f"opencode-linux-{arch}"


def unavailable() -> str | None:
    if platform_package() is None:
        return f"opencode publishes no executable for {platform.system()} {platform.machine()} in {PACKAGE}"
    return None


def config(place: Place, settings: AgentSettings) -> dict[str, object]:
    model = {"name": "flint", "limit": {"context": settings.ctx, "output": answer_limit(settings.ctx)}}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "flint",
        "options": {"baseURL": f"{place.flint_url}/v1", "apiKey": "none"},
        "models": {"flint": model},
    }
    build = {"steps": settings.max_steps, "options": json.loads(settings.sampling)}
    return {
        "model": MODEL,
        "provider": {"flint": provider},
        "agent": {"build": build},
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        "autoupdate": False,
        "share": "disabled",
    }


def launch(place: Place, settings: AgentSettings) -> Launch:
    exe = f"{place.installed}/node_modules/{platform_package()}/bin/opencode"
    # --title: no side request for a title, which on a one-slot server evicts the main prompt from the cache
    argv = ["sh", "-c", RUN, exe, place.task_file, "--model", MODEL, "--dir", place.repo, "--title", "bench"]
    home = f"{place.out_dir}/opencode-home"
    env = {"OPENCODE_CONFIG_CONTENT": json.dumps(config(place, settings)), **OFFLINE_ENV}
    env |= {f"XDG_{name}_HOME": f"{home}/{name.lower()}" for name in ("CONFIG", "DATA", "CACHE", "STATE")}
    # At start it installs its plugin package into its configuration folder in the background, with no switch to
    # stop it: its npm is told offline, with an empty cache and a closed registry, so it fails closed (its log:
    # `background dependency install failed`) and opencode goes on, as in the docker sandbox's closed network.
    env |= {"npm_config_offline": "true", "npm_config_registry": f"{CLOSED_PORT}/", "npm_config_cache": f"{home}/npm"}
    return Launch(argv, env)


OPENCODE = AgentKind(
    name="opencode",
    dialect="chat-completions",
    done="it ended its session itself (exit status 0)",
    install=Install(npm=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    unavailable=unavailable,
    # Measured on Qwen2.5-Coder: 7,189-7,367 tokens (system prompt 9.8K characters, nine tools 19.8K); below it,
    # every request is a context 400 and opencode compacts and retries without end
    min_ctx=(8192, "its first request alone is about 7,400 tokens: its system prompt and nine tools"),
    real_run=(
        "real runs: make bench CTX=8192 MAX_STEPS=3 (docs/agents.md, Measured here), ended by the proxy's step limit"
    ),
)
