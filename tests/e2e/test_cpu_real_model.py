"""A real model acting on the CPU: one short `bench run` with Qwen2.5-Coder-0.5B as Flint (cpu_model, served with the
fenced template: bench/llama/serving.py), read from its row and its trace.

No grammar makes it call tools: what it calls, with what, and when it stops are its own, so this asserts the kinds of
events a real model makes rather than a sequence of steps: its own tool calls parsed by llama-server, tool errors,
clearings and answers cut at the window wherever they occur, and the reprocessed-token check against /metrics. At a
2,048-token window a run of 12 steps took 97 s here (the module 153 s with the servers' start and llama-bench), 400 s
and more at a load of 20; its clearings start at step 4 and every later step repeats them, so 8 steps show as much.
The model is made ready by `make test` (python -m bench.llama.chunks), else the bench makes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from config_bench import of, run_config

from agent.presets import PRESETS
from bench import ROOT
from bench.llama.cpu_models import CPU_MODELS
from bench.replay.command import tokenizer_for
from bench.replay.policies import parse_policy
from bench.replay.walk import load_timeline, replay

pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("cpu-real-model")]
MODEL = CPU_MODELS["qwen2.5-coder-0.5b"]
PRESET, CTX = "part3", 2048
CONFIG = f"""
fixtures: [todo_repo]
presets: [{PRESET}]
ctx: [{CTX}]
reps: 1
max_steps: 8
sandbox: local
servers: embedded
cpu_model: {MODEL.name}
jeff_ctx: 1024
run_timeout_s: 400
"""
TOOLS = {"read_file", "write_file", "edit_file", "run"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], list[dict[str, Any]], Path]:
    """The row, the event trace and the run folder of one bench run."""
    return run_config(tmp_path_factory.mktemp("cpu-real-model"), CONFIG, timeout_s=900)


def test_the_row_says_which_model_acted_and_how_it_was_served(run: tuple[dict[str, str], list, Path]) -> None:
    row, _, run_dir = run
    assert row["error"] == "" and row["stop_reason"] in ("done", "step_limit", "context_exhausted"), row["error"]
    assert row["flint_model"] == MODEL.file and row["flint_model_sha256"] == MODEL.sha256
    assert row["flint_serving"] == "native-fenced"
    assert "SmolLM2" in row["jeff_model"]  # Jeff keeps the small model
    command = json.loads((run_dir / "run.json").read_text())["flint_server"]["command"]
    assert "--grammar-file" not in command  # nothing forces a call: the template is the project's fenced one
    assert command[command.index("--chat-template-file") + 1].endswith("flint.jinja")


def test_its_own_tool_calls_are_parsed_by_the_server(run: tuple[dict[str, str], list, Path]) -> None:
    row, events, _ = run
    responses = of(events, "response")
    assert responses and int(row["steps"]) == len(responses)
    called = [r for r in responses if r["tool_calls"]]
    assert called, "the model made no tool call llama-server parsed"
    assert all(r["finish_reason"] == "tool_calls" for r in called)
    tools = of(events, "tool")
    assert tools and {t["name"] for t in tools} <= TOOLS
    # A call the agent could not carry out gets the tool's error, which the model reads at the next step.
    for tool in tools:
        assert tool["ok"] or tool["error"], tool


def test_clearings_and_cut_answers_are_handled_as_the_preset_says(run: tuple[dict[str, str], list, Path]) -> None:
    row, events, _ = run
    assert int(row["clearings"]) == len([c for c in of(events, "clear") if c["changed"]])
    cuts = of(events, "cut")
    assert int(row["cut_answers"]) == len(cuts)
    for cut in cuts:  # part3 drops a cut answer: nothing of it runs
        response = [r for r in of(events, "response") if r["step"] == cut["step"]][-1]
        assert response["finish_reason"] == "length" and cut["dropped"] is PRESETS[PRESET].drops_cut
        assert [t for t in of(events, "tool") if t["step"] == cut["step"]] == []
    if row["stop_reason"] == "done":  # a real "done": the model answered without a call, and the check ran
        assert of(events, "done_check")


def test_the_reprocessed_tokens_equal_the_servers_own_counter(run: tuple[dict[str, str], list, Path]) -> None:
    row, events, _ = run
    responses = of(events, "response")
    assert int(row["prompt_tokens_reprocessed"]) == sum(r["timings"]["prompt_n"] for r in responses)
    assert row["reprocessed_check"] == "ok" and row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"]


def test_replay_counts_the_runs_prompts_with_its_own_model_and_template(run: tuple[dict[str, str], list, Path]) -> None:
    """`bench replay` without --flint-url starts the Qwen model with the fenced template (not SmolLM2, whose
    tokenizer and template would count other prompts): the run's own policy reproduces each measured prompt_n."""
    _, _, run_dir = run
    timeline = load_timeline(run_dir)
    with tokenizer_for([run_dir], None, ROOT) as tokenizer:
        replayed = replay(timeline, parse_policy("run", timeline.preset, timeline.keep, timeline.clear_at), tokenizer)
    assert replayed.ended_at is None and len(replayed.prompt_n) == len(timeline.steps)
    for mine, measured in zip(replayed.prompt_n, replayed.measured, strict=True):
        assert measured is not None and abs(mine - measured) <= 0.02 * measured, (mine, measured)
