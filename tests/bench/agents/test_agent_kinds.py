"""Agents as kinds: the article's command line from its kind, and a new agent as one module and one registry line,
run through the bench's pipeline (the fake servers, the real local sandbox and recording proxy, real grading)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import ROOT
from bench.agents.base import Place
from bench.agents.kinds import KINDS, agent_kind, listing
from bench.config import BenchConfig, Choice, load_config
from bench.errors import ConfigError
from bench.fixtures.fixture import load_fixture
from bench.results.append import read_rows
from bench.results.serving import FORCED_SERVING
from bench.run.agents_model import settings_as_run
from bench.run.choices import Factory, Host
from bench.run.plan import plan_runs
from bench.run.runner import Bench
from bench.run.spelling import FROM_MAKE
from bench.sandbox.local import LocalSandboxes
from bench.testing.fakes import NO_GPU, FakeFactory, FakeServers
from bench.testing.tiny_agent import tiny

SOLUTION = load_fixture("todo_repo", ROOT).solution_dir
SOLVED = {name: (SOLUTION / name).read_text() for name in ("todo.py", "test_due.py")}
PLACE = Place("python3", "/repo", "/repo/TASK.md", "/out", "http://flint:8080", None, command_user="10001:10001")


def test_the_article_kind_builds_the_agents_command_line() -> None:
    config = BenchConfig(presets=["late"], clear_at=0.5, use_jeff=False)
    from bench.run.plan import RunInputs

    assert RunInputs  # the runner's inputs make the command: bench.run.plan.RunInputs.agent_command
    argv = agent_kind("article").launch(PLACE, _settings(config)).argv
    assert argv[:7] == ["python3", "-m", "agent", "--repo", "/repo", "--task-file", "/repo/TASK.md"]
    assert argv[argv.index("--events") + 1] == "/out/events.jsonl" and "--no-jeff" in argv
    assert argv[argv.index("--preset") + 1] == "late" and argv[argv.index("--approve") + 1] == "yes"
    assert agent_kind("article").launch(PLACE, _settings(config)).env == {"AGENT_COMMAND_USER": "10001:10001"}


def _settings(config: BenchConfig):  # type: ignore[no-untyped-def]
    from bench.agents.base import AgentSettings

    return AgentSettings("late", 4096, 30, config.keep, 0.75, "{}", 0, 1.0, 60.0, 30.0, config.jeff_steps)


def test_an_unknown_agent_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ConfigError, match="the kinds are article"):
        agent_kind("nope")
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        BenchConfig(agents=["nope"])


def test_the_matrix_runs_the_articles_presets_and_each_other_agent_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KINDS, "tiny", tiny({}))
    config = BenchConfig(agents=["article", "tiny"], presets=["part2", "part3"], ctx=[2048, 4096], reps=2)
    runs = plan_runs(config, ROOT)
    assert len(runs) == 2 * (2 + 1) * 2
    assert sorted({(run.agent, run.preset) for run in runs}) == [
        ("article", "part2"),
        ("article", "part3"),
        ("tiny", ""),
    ]
    assert {run.label for run in runs} == {"part2", "part3", "tiny"}


def test_bench_agents_lists_every_kind_with_version_dialect_and_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KINDS, "tiny", tiny({}))
    lines = listing(KINDS.values())
    assert lines[0].split()[0] == "article" and "chat-completions" in lines[0] and "ready; real runs: " in lines[0]
    assert lines[-1].split()[:3] == ["tiny", "0.1", "chat-completions"] and lines[-1].endswith("ready")
    qwen = next(line for line in lines if line.startswith("qwen-code"))
    assert qwen.endswith(agent_kind("qwen-code").real_run) and "no real run has completed" in qwen


@pytest.mark.usefixtures("child_processes")
def test_a_new_agent_kind_runs_through_the_pipeline_and_gets_the_articles_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KINDS, "tiny", tiny(SOLVED))
    config = BenchConfig(agents=["tiny"], use_jeff=False, sandbox="local", out=str(tmp_path / "r.csv"))
    servers = FakeServers()
    (row,) = Bench(
        config, FakeFactory(config, servers, LocalSandboxes(config, checkout=ROOT), checkout=ROOT), checkout=ROOT
    ).run()
    assert (row["agent"], row["agent_version"], row["api_dialect"], row["preset"]) == (
        "tiny",
        "0.1",
        "chat-completions",
        "",
    )
    assert (row["stop_reason"], row["steps"], row["hidden_passed"], row["hidden_total"]) == ("done", "2", "6", "6")
    assert row["reprocessed_check"] == "ok", row["error"]
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] != ""
    # a server started for the run: its lifetime n_tokens_max rose to the run's peak, less the never-decoded last token
    assert int(row["n_tokens_max_metrics"]) == int(row["n_tokens_max"]) - 1, row["error"]
    assert read_rows(tmp_path / "r.csv") == [row]
    run_dir = next((tmp_path / "runs").glob("*-tiny-*")) if (tmp_path / "runs").exists() else None
    logs = list(tmp_path.rglob("proxy.jsonl"))
    assert logs, run_dir
    exchanges = [json.loads(line) for line in logs[0].read_text().splitlines()]
    assert [e["route"] for e in exchanges] == ["POST /v1/chat/completions"] * 2  # /metrics refused, not passed
    assert all(e["status"] == 200 and e["timings"]["prompt_n"] > 0 for e in exchanges)


def test_mini_swe_agent_runs_headless_at_the_proxy_with_the_runs_limits_and_offline() -> None:
    settings = _settings(BenchConfig())
    place = Place("python3", "/w/repo", "/w/repo/TASK.md", "/w/out", "http://127.0.0.1:5000", None, installed="/v")
    launch = agent_kind("mini-swe-agent").launch(place, settings)
    argv = launch.argv
    assert argv[3:5] == ["/v/bin/mini", "/w/repo/TASK.md"] and "agent.step_limit=30" in argv
    kwargs = json.loads(next(a for a in argv if a.startswith("model.model_kwargs="))[len("model.model_kwargs=") :])
    assert kwargs["api_base"] == "http://127.0.0.1:5000/v1" and kwargs["max_tokens"] == 1024  # a quarter of 4096
    assert launch.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True" and launch.env["MSWEA_CONFIGURED"] == "true"
    assert agent_kind("mini-swe-agent").version() == "2.4.6" and not agent_kind("mini-swe-agent").own_trace


@pytest.mark.usefixtures("child_processes")  # the bench reads its commit with git
@pytest.mark.parametrize(("make", "fix"), [(True, "CPU_MODEL=qwen2.5-coder-0.5b"), (False, "--cpu-model qwen2.5")])
def test_an_agent_with_its_own_tool_calls_is_refused_on_the_forced_cpu_default_before_anything_runs(
    make: bool, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if make:
        monkeypatch.setenv(FROM_MAKE, "1")
    out = tmp_path / "r.csv"
    config = BenchConfig(agents=["article", "mini-swe-agent"], ctx=[8192], sandbox="local", out=str(out))
    factory = Factory(config, Choice("local", "asked"), Choice("embedded", "asked"), Host(None, NO_GPU), checkout=ROOT)
    assert factory.serving() == FORCED_SERVING  # SmolLM2 on this host's CPU, as the servers would serve it
    with pytest.raises(ConfigError) as refused:
        Bench(config, factory, checkout=ROOT).run()
    said = str(refused.value)
    assert said.startswith("agents: mini-swe-agent cannot run on Flint's smollm2") and fix in said and "\n" not in said
    assert not out.exists()  # refused before the results file, its lock or any server


def test_a_model_that_writes_its_own_tool_calls_or_the_article_alone_is_not_refused() -> None:
    qwen = BenchConfig(agents=["mini-swe-agent"], ctx=[8192], cpu_model="qwen2.5-coder-0.5b")
    factory = Factory(qwen, Choice("local", ""), Choice("embedded", ""), Host(None, NO_GPU), checkout=ROOT)
    serving = factory.serving()
    assert serving != FORCED_SERVING
    assert plan_runs(qwen, ROOT, serving)
    assert plan_runs(BenchConfig(agents=["article"], presets=["part3"]), ROOT, FORCED_SERVING)


def test_a_matrix_with_an_agent_of_its_own_tool_calls_gets_the_qwen_model_on_a_cpu_unless_one_was_chosen() -> None:
    asked = load_config(None, {"agents": ["article", "mini-swe-agent"], "ctx": [8192]})
    ran, notes = settings_as_run(asked)
    assert (asked.cpu_model, ran.cpu_model) == ("smollm2", "qwen2.5-coder-0.5b")  # every run, the article's too
    assert len(notes) == 1 and "qwen2.5-coder-0.5b" in notes[0] and "mini-swe-agent" in notes[0], notes
    factory = Factory(ran, Choice("local", ""), Choice("embedded", ""), Host(None, NO_GPU), checkout=ROOT)
    assert factory.serving() != FORCED_SERVING and plan_runs(ran, ROOT, factory.serving())

    for kept in (
        {"agents": ["article"]},  # the article's agent alone: SmolLM2, forced, as before
        {"agents": ["mini-swe-agent"], "cpu_model": "smollm2"},  # chosen by hand: kept, then refused
        {"agents": ["mini-swe-agent"], "cpu_model": "qwen2.5-coder-1.5b"},
        {"agents": ["mini-swe-agent"], "flint_tools": "native"},
    ):
        config = load_config(None, kept)
        assert settings_as_run(config) == (config, []), kept
