"""pi (npm `@mariozechner/pi-coding-agent`, pinned) as the kind `pi`: a Node.js agent, started with this machine's
`node` (20.6 or newer, as the package requires), which its install folder links as bin/node (and its docker image
copies: docker/agent-npm.Dockerfile).

Headless: `pi -p TASK` (print mode: one prompt, its tool calls, exit) with no session file, no discovered extensions,
skills, templates or context files, and `--offline` (no update check, no telemetry). Its configuration lives in its
own folder under the run's (PI_CODING_AGENT_DIR), written as it starts: models.json with one provider, `flint`, in
the OpenAI chat-completions dialect at the recording proxy, whose model has the run's window and an answer limit of
min(2048, ctx/4); settings.json whose compaction keeps that answer's room and a quarter of the window. pi has no step
limit or sampling setting of its own: a small extension of the bench's (EXTENSION) adds the run's sampling to each
request and ends the prompt after the run's step limit of turns.

Done: its last answer ended the prompt (exit status 0); an aborted or failed last answer is exit status 1.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess

from bench.agents.base import AgentKind, AgentSettings, Install, Launch, Place, answer_limit
from bench.agents.npm_start import node_too_old

VERSION = "0.73.1"
PACKAGE = f"@mariozechner/pi-coding-agent@{VERSION}"
NODE_MIN = (20, 6)
CLI = "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
# The bench's extension (pi's extension API, documented in its package): sampling into every request, and
# the prompt aborted once the step limit of turns is reached (print mode then exits 1).
EXTENSION = """
export default function (pi) {
  const limit = Number(process.env.AGENTBENCH_STEP_LIMIT);
  const sampling = JSON.parse(process.env.AGENTBENCH_SAMPLING || "{}");
  pi.on("before_provider_request", (event) => ({ ...event.payload, ...sampling }));
  pi.on("turn_end", async (event, ctx) => {
    if (event.turnIndex + 1 >= limit) ctx.abort();
  });
}
"""
# Writes its configuration into its folder, then starts pi on the task file's text ($0 node, $1 the task file).
RUN = (
    'd="$PI_CODING_AGENT_DIR"; mkdir -p "$d" && printf %s "$AGENTBENCH_PI_MODELS" > "$d/models.json" && '
    'printf %s "$AGENTBENCH_PI_SETTINGS" > "$d/settings.json" && printf %s "$AGENTBENCH_PI_EXTENSION" > "$d/bench.js" '
    '&& task="$(cat "$1")" && node="$0" && shift && exec "$node" "$@" -e "$d/bench.js" -p "$task"'
)
FLAGS = ["--provider", "flint", "--model", "flint", "--no-session", "--offline", "--no-extensions", "--no-skills"]
FLAGS += ["--no-prompt-templates", "--no-themes", "--no-context-files"]


@functools.cache
def node_version() -> tuple[int, ...] | None:
    """This machine's Node.js version, or None where there is no `node`."""
    exe = shutil.which("node")
    if exe is None:
        return None
    found = re.match(r"v(\d+)\.(\d+)", subprocess.run([exe, "--version"], capture_output=True, text=True).stdout)
    return tuple(int(part) for part in found.groups()) if found else None


def unavailable() -> str | None:
    return node_too_old(PACKAGE, node_version(), NODE_MIN)


def models(place: Place, ctx: int) -> dict[str, object]:
    model = {"id": "flint", "contextWindow": ctx, "maxTokens": answer_limit(ctx), "reasoning": False}
    compat = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}  # llama-server's chat template
    provider = {"baseUrl": f"{place.flint_url}/v1", "api": "openai-completions", "apiKey": "none", "compat": compat}
    return {"providers": {"flint": {**provider, "models": [{**model, "input": ["text"]}]}}}


def launch(place: Place, settings: AgentSettings) -> Launch:
    compaction = {"enabled": True, "reserveTokens": answer_limit(settings.ctx), "keepRecentTokens": settings.ctx // 4}
    config = {"compaction": compaction, "enableInstallTelemetry": False, "quietStartup": True}
    env = {
        "PI_CODING_AGENT_DIR": f"{place.out_dir}/pi-agent",
        "PI_OFFLINE": "1",
        "PI_TELEMETRY": "0",
        "AGENTBENCH_PI_MODELS": json.dumps(models(place, settings.ctx)),
        "AGENTBENCH_PI_SETTINGS": json.dumps(config),
        "AGENTBENCH_PI_EXTENSION": EXTENSION,
        "AGENTBENCH_STEP_LIMIT": str(settings.max_steps),
        "AGENTBENCH_SAMPLING": settings.sampling,
    }
    argv = ["sh", "-c", RUN, f"{place.installed}/bin/node", place.task_file, f"{place.installed}/{CLI}", *FLAGS]
    return Launch(argv, env)


PI = AgentKind(
    name="pi",
    dialect="chat-completions",
    done="its last answer ended the prompt (exit status 0)",
    install=Install(npm=(PACKAGE,)),
    version=lambda: VERSION,
    launch=launch,
    unavailable=unavailable,
    real_run="real runs: make test (tests/integration/test_npm_agents_real.py)",
)
