"""The agents from npm as kinds: their pinned install with the machine's own npm, their headless command lines and
configuration at the recording proxy, and the windows they are refused below. (Their real runs against llama-server:
tests/integration/test_agents_real.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import ROOT
from bench.agents import install, opencode, pi
from bench.agents.base import AgentSettings, Place
from bench.agents.kinds import KINDS, agent_kind
from bench.config import BenchConfig
from bench.errors import ConfigError, PrerequisiteError
from bench.run.plan import plan_runs
from bench.testing.tiny_agent import tiny

SETTINGS = AgentSettings("", 8192, 7, 2, 0.5, '{"seed": 42, "temperature": 0.0}', 0, 1.0, 60.0, 30.0, 3)
PLACE = Place("python3", "/w/repo", "/w/repo/TASK.md", "/w/out", "http://127.0.0.1:5000", None, installed="/v")


def test_npm_kinds_are_installed_exactly_with_the_machines_npm_and_no_install_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(install.shutil, "which", lambda name: f"/usr/bin/{name}")
    (command,) = install.install_commands(agent_kind("opencode"), tmp_path)
    assert command[:4] == ["/usr/bin/npm", "install", "--prefix", str(tmp_path)]
    assert command[-1] == "opencode-ai@1.18.33" and "--ignore-scripts" in command
    assert not [flag for flag in command if flag.startswith("--registry")]  # npm's own configuration says where


def test_no_npm_is_one_line_naming_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(install.shutil, "which", lambda name: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(PrerequisiteError, match=r"npm not found, needed for opencode-ai@1.18.33: install Node.js"):
        install.ensure_installed(agent_kind("opencode"))
    assert not install.is_installed(agent_kind("opencode"))


def test_opencode_runs_headless_at_the_proxy_with_the_runs_window_steps_and_sampling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(opencode, "platform_package", lambda: "opencode-linux-x64")
    launch = agent_kind("opencode").launch(PLACE, SETTINGS)
    assert launch.argv[3:5] == ["/v/node_modules/opencode-linux-x64/bin/opencode", "/w/repo/TASK.md"]
    assert launch.argv[5:] == ["--model", "flint/flint", "--dir", "/w/repo", "--title", "bench"]
    config = json.loads(launch.env["OPENCODE_CONFIG_CONTENT"])
    provider = config["provider"]["flint"]
    assert provider["options"]["baseURL"] == "http://127.0.0.1:5000/v1" and config["model"] == "flint/flint"
    assert provider["models"]["flint"]["limit"] == {"context": 8192, "output": 2048}
    assert config["agent"]["build"] == {"steps": 7, "options": {"seed": 42, "temperature": 0.0}}
    assert config["permission"]["webfetch"] == "deny" and launch.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert {launch.env[f"XDG_{n}_HOME"] for n in ("CONFIG", "DATA")} == {
        "/w/out/opencode-home/config",
        "/w/out/opencode-home/data",
    }


@pytest.mark.usefixtures("child_processes")
def test_opencode_is_given_the_task_files_text_as_its_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opencode, "platform_package", lambda: "p")
    exe = tmp_path / "node_modules" / "p" / "bin" / "opencode"
    exe.parent.mkdir(parents=True)
    exe.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n')
    exe.chmod(0o755)
    task = tmp_path / "TASK.md"
    task.write_text('# Task: it\'s "quoted"\n$HOME stays\n')
    place = Place("python3", str(tmp_path), str(task), str(tmp_path), "http://x", None, installed=str(tmp_path))
    argv = agent_kind("opencode").launch(place, SETTINGS).argv
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert out.startswith("[run][--model][flint/flint]")
    assert out.endswith('[# Task: it\'s "quoted"\n$HOME stays]')


def test_a_window_smaller_than_an_agents_first_request_is_refused_before_anything_runs() -> None:
    with pytest.raises(ConfigError) as refused:
        plan_runs(BenchConfig(agents=["opencode"], ctx=[2048, 8192]), ROOT)
    assert str(refused.value) == (
        "agents: opencode needs ctx >= 8192 (its first request alone is about 7,400 tokens: its system prompt and "
        "nine tools), not 2048: raise ctx or drop opencode"
    )
    assert len(plan_runs(BenchConfig(agents=["opencode"], ctx=[8192]), ROOT)) == len(BenchConfig().fixtures)


def test_a_kind_that_cannot_run_here_is_refused_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    monkeypatch.setitem(KINDS, "tiny", replace(tiny({}), unavailable=lambda: "it needs Node.js 22, this has 20"))
    with pytest.raises(ConfigError, match=r"^agents: tiny cannot run here: it needs Node.js 22, this has 20; drop"):
        plan_runs(BenchConfig(agents=["tiny"]), ROOT)


def test_pi_runs_in_print_mode_at_the_proxy_with_the_runs_window_and_its_own_folder() -> None:
    launch = agent_kind("pi").launch(PLACE, SETTINGS)
    assert launch.argv[3:6] == ["/v/bin/node", "/w/repo/TASK.md", f"/v/{pi.CLI}"]
    assert {"--offline", "--no-session", "--no-extensions"} <= set(launch.argv)
    provider = json.loads(launch.env["AGENTBENCH_PI_MODELS"])["providers"]["flint"]
    assert (provider["baseUrl"], provider["api"]) == ("http://127.0.0.1:5000/v1", "openai-completions")
    assert provider["models"][0] | {"input": None} == {
        "id": "flint",
        "contextWindow": 8192,
        "maxTokens": 2048,
        "reasoning": False,
        "input": None,
    }
    compaction = json.loads(launch.env["AGENTBENCH_PI_SETTINGS"])["compaction"]
    assert compaction == {"enabled": True, "reserveTokens": 2048, "keepRecentTokens": 2048}
    assert (launch.env["AGENTBENCH_STEP_LIMIT"], launch.env["PI_CODING_AGENT_DIR"]) == ("7", "/w/out/pi-agent")
    assert launch.env["AGENTBENCH_SAMPLING"] == SETTINGS.sampling and launch.env["PI_OFFLINE"] == "1"


@pytest.mark.parametrize(
    ("found", "why"),
    [
        (None, "no `node` on PATH: install Node.js 20.6 or newer"),
        ((18, 20), "needs Node.js 20.6 or newer, this machine's is 18.20: install a newer nodejs"),
        ((20, 6), None),
    ],
)
def test_pi_says_in_one_line_when_this_machines_node_is_too_old(
    monkeypatch: pytest.MonkeyPatch, found: tuple[int, int] | None, why: str | None
) -> None:
    monkeypatch.setattr(pi, "node_version", lambda: found)
    said = agent_kind("pi").unavailable()
    assert said == why if why is None else why in (said or "")


def test_qwen_code_runs_once_at_the_proxy_with_the_runs_turns_window_and_sampling() -> None:
    launch = agent_kind("qwen-code").launch(PLACE, SETTINGS)
    argv = launch.argv
    assert argv[3:6] == ["/v/bin/node", "/w/repo/TASK.md", "/v/node_modules/@qwen-code/qwen-code/cli-entry.js"]
    assert argv[argv.index("--openai-base-url") + 1] == "http://127.0.0.1:5000/v1" and "--yolo" in argv
    assert argv[argv.index("--max-session-turns") + 1] == "7" and argv[argv.index("--auth-type") + 1] == "openai"
    generation = json.loads(launch.env["AGENTBENCH_QWEN_SETTINGS"])["model"]["generationConfig"]
    assert generation == {
        "contextWindowSize": 8192,
        "samplingParams": {"seed": 42, "temperature": 0.0, "max_tokens": 2048},
        "timeout": 60_000,  # the run's request timeout, for its request and its stream's guards
        "streamIdleTimeoutMs": 60_000,
    }
    assert launch.env["QWEN_HOME"] == "/w/out/qwen-home" and launch.env["QWEN_STREAM_MAX_LIFETIME_MS"] == "60000"
    with pytest.raises(ConfigError, match=r"agents: qwen-code needs ctx >= 24576 \(its first request alone"):
        plan_runs(BenchConfig(agents=["qwen-code"], ctx=[8192]), ROOT)
