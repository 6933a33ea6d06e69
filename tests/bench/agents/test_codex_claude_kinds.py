"""Codex CLI and Claude Code as agent kinds (bench/agents/codex.py, claude_code.py): each started headless on the
task's text at the recording proxy in its own dialect, with its window, compaction and answer limit from the run's
ctx, and its own traffic switched off."""

from __future__ import annotations

from bench.agents.base import AgentSettings, Place
from bench.agents.kinds import agent_kind

SETTINGS = AgentSettings("", 8192, 12, 2, 0.5, "{}", 0, 1.0, 600.0, 30.0, 0)
PLACE = Place("python3", "/w/repo", "/w/repo/TASK.md", "/w/out", "http://127.0.0.1:5000", None, installed="/a")


def test_codex_speaks_responses_to_a_provider_at_the_proxy_with_the_runs_window() -> None:
    kind = agent_kind("codex")
    launch = kind.launch(PLACE, SETTINGS)
    argv = launch.argv
    assert argv[:2] == ["sh", "-c"] and argv[3].startswith("/a/node_modules/@openai/codex-linux-")
    assert argv[4] == "/w/repo/TASK.md" and argv[5] == "exec"  # the task file's text is the prompt, read at start
    settings = [argv[i + 1] for i, flag in enumerate(argv) if flag == "-c"]
    assert 'model_providers.flint={name="flint",base_url="http://127.0.0.1:5000/v1",wire_api="responses"}' in settings
    assert "model_context_window=8192" in settings and "model_auto_compact_token_limit=7372" in settings
    assert "features.plugins=false" in settings  # its plugins' catalogues are fetched from the internet at start
    assert launch.env["CODEX_HOME"] == "/w/out/codex-home" and kind.dialect == "responses"
    assert launch.env["HTTPS_PROXY"] == "http://127.0.0.1:9" and launch.env["NO_PROXY"] == "127.0.0.1"


def test_claude_code_speaks_messages_at_the_proxy_with_its_compaction_window_and_turns() -> None:
    kind = agent_kind("claude-code")
    launch = kind.launch(PLACE, SETTINGS)
    assert launch.argv[3] == "/a/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
    assert launch.argv[launch.argv.index("--max-turns") + 1] == "12"
    env = launch.env
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:5000" and env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] == "8192"
    assert "CLAUDE_CODE_AUTO_COMPACT_WINDOW" not in env  # it reads any value under 100K as 100K
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:9" and env["NO_PROXY"] == "127.0.0.1"
    assert env["ANTHROPIC_SMALL_FAST_MODEL"] == "flint"  # its side requests go to the same server, through the proxy
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1" and kind.dialect == "messages"
