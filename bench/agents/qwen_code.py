"""Qwen Code (npm `@qwen-code/qwen-code`, pinned) as the kind `qwen-code`: a Node.js agent, started with the node
its install folder links as bin/node (bench/agents/install.py), as pi is.

Headless: `qwen TASK` (a prompt given on the command line runs once and exits) with `--yolo` (its tools without
asking), `--max-session-turns` the run's step limit, and its OpenAI dialect at the recording proxy
(`--auth-type openai --openai-base-url`). Its settings live in its own folder under the run's (QWEN_HOME), written as
it starts: the model's context window is the run's `ctx`, its sampling the run's with an answer limit of
min(2048, ctx/4), its request and stream time limits the run's request timeout, and updates, usage statistics and
telemetry are off.

Done: it ended its turn itself (exit status 0).
"""

from __future__ import annotations

import json

from bench.agents import pi
from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, answer_limit
from bench.agents.npm_start import node_too_old

VERSION = "0.24.4"
PACKAGE = f"@qwen-code/qwen-code@{VERSION}"
CLI = "node_modules/@qwen-code/qwen-code/cli-entry.js"
NODE_MIN = (20, 0)  # its package asks for 22; 0.24.4 ran here on 20.20 (tests/integration/test_npm_agents_real.py)
# Writes its settings into its folder, then starts it on the task file's text ($0 node, $1 the task file).
RUN = (
    'mkdir -p "$QWEN_HOME" && printf %s "$AGENTBENCH_QWEN_SETTINGS" > "$QWEN_HOME/settings.json" && '
    'task="$(cat "$1")" && node="$0" && shift && exec "$node" "$@" "$task"'
)


def unavailable() -> str | None:
    return node_too_old(PACKAGE, pi.node_version(), NODE_MIN)


def settings_file(settings: AgentSettings) -> dict[str, object]:
    sampling = {**json.loads(settings.sampling), "max_tokens": answer_limit(settings.ctx)}
    generation: dict[str, object] = {"contextWindowSize": settings.ctx, "samplingParams": sampling}
    # Its own limits (0.24.4: a request 120 s, a stream 240 s without a chunk) would end a first prompt's prefill
    # on two cores, which streams nothing until it ends: the run's request timeout instead (and in launch).
    generation |= {"timeout": limit_ms(settings), "streamIdleTimeoutMs": limit_ms(settings)}
    return {
        "model": {"name": "flint", "generationConfig": generation},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }


def limit_ms(settings: AgentSettings) -> int:
    return round(settings.request_timeout_s * 1000)


def launch(place: Place, settings: AgentSettings) -> Launch:
    flags = ["--auth-type", "openai", "--openai-base-url", f"{place.flint_url}/v1", "--openai-api-key", "none"]
    flags += ["--model", "flint", "--yolo", "--max-session-turns", str(settings.max_steps)]
    argv = ["sh", "-c", RUN, f"{place.installed}/bin/node", place.task_file, f"{place.installed}/{CLI}", *flags]
    env = {"QWEN_HOME": f"{place.out_dir}/qwen-home", "AGENTBENCH_QWEN_SETTINGS": json.dumps(settings_file(settings))}
    env["QWEN_CODE_SUPPRESS_YOLO_WARNING"] = "1"  # the sandbox is the bench's
    env["QWEN_STREAM_MAX_LIFETIME_MS"] = str(limit_ms(settings))  # a stream's whole time (900 s): no setting has it
    return Launch(argv, env)


QWEN_CODE = AgentKind(
    name="qwen-code",
    dialect="chat-completions",
    done="it ended its turn itself (exit status 0)",
    install=Install(npm=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    unavailable=unavailable,
    # Its first request is 37K characters of messages and 39K of tool definitions: about 18,000 tokens at the 4.2
    # characters a token measured on opencode's (a scripted server answered it with a context 400 at 8192)
    min_ctx=(24576, "its first request alone is about 18,000 tokens: its system prompt and tools"),
    # Measured here (docs/agents.md): the one real run, beside CI, cut at the request timeout
    real_run=(
        "no real run has completed here: its 17,973-token first prompt took 16 min of prefill on two busy cores and "
        "its answer was cut at the 1,800 s request timeout (docs/agents.md)"
    ),
)
