"""What the npm agents of this module's kinds share: where their executable lies in the kind's folder (npm's
node_modules under it, bench/agents/install.py), and a start line that reads the task file's text as the agent's
prompt argument."""

from __future__ import annotations

# $0 the executable, $1 the task file, the rest its flags: the task's text comes last, as the prompt. Its home
# ($HOME, made here: codex refuses a CODEX_HOME that does not exist) is under the run's out folder.
RUN_ON_TASK = 'mkdir -p "$HOME" && exe="$0" && task="$(cat "$1")" && shift && exec "$exe" "$@" "$task"'


def answer_limit(ctx: int) -> int:
    """Tokens an answer may take: a quarter of the window, at most 2,048 (as mini-swe-agent's and aider's)."""
    return min(2048, ctx // 4)


def start(executable: str, task_file: str, flags: list[str]) -> list[str]:
    return ["sh", "-c", RUN_ON_TASK, executable, task_file, *flags]
