"""Jeff acting for real: one short `bench run` of jeff-first with Qwen2.5-Coder-0.5B as Flint and as Jeff
(jeff_cpu_model, served with the fenced template like Flint: bench/llama/serving.py), read from its row and trace.

With SmolLM2 as Jeff he answered in prose and handed over at once: he never acted. Here his answers are the model's
own tool calls, parsed by his llama-server, carried out by the agent, and counted in his model time and in the
floor; his window is the run's (the preset's, not jeff_ctx) and the row keys on it. The reprocessing check is
Flint's alone: Jeff's requests never reach Flint's server.
"""

from __future__ import annotations

from typing import Any

import pytest
from config_bench import of, run_config

from bench.llama.cpu_models import CPU_MODELS

pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("cpu-real-model")]
MODEL = CPU_MODELS["qwen2.5-coder-0.5b"]
CTX, JEFF_CTX, K = 2048, 1024, 2
CONFIG = f"""
fixtures: [todo_repo]
presets: [jeff-first]
ctx: [{CTX}]
reps: 1
max_steps: 5
sandbox: local
servers: embedded
cpu_model: {MODEL.name}
jeff_cpu_model: {MODEL.name}
jeff_ctx: {JEFF_CTX}
jeff_steps: {K}
jeff_timeout_s: 120
run_timeout_s: 600
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], list[dict[str, Any]]]:
    row, events, _ = run_config(tmp_path_factory.mktemp("cpu-real-jeff"), CONFIG, timeout_s=1200)
    return row, events


def test_jeff_is_the_qwen_model_at_the_presets_window(run: tuple[dict[str, str], list]) -> None:
    row, events = run
    assert row["error"] == "" and row["jeff_model"] == MODEL.file and row["jeff_model_sha256"] == MODEL.sha256
    assert row["jeff_window"] == str(CTX) and of(events, "start")[0]["jeff_n_ctx"] == CTX  # not jeff_ctx
    assert row["jeff_first_steps"] == str(K)


def test_jeff_acts_with_his_own_tool_calls_and_hands_over_to_flint(run: tuple[dict[str, str], list]) -> None:
    row, events = run
    acted = [e for e in of(events, "jeff_step") if e["kind"] == "act" and e["tool_calls"]]
    assert acted, of(events, "jeff_step")  # the model's own calls, parsed by Jeff's server
    assert all(e["finish_reason"] == "tool_calls" and e["usage"]["completion_tokens"] > 0 for e in acted)
    assert int(row["jeff_steps"]) == len(acted) <= K
    for step in {e["step"] for e in acted}:  # the agent carried out what Jeff called
        assert [t for t in of(events, "tool") if t["step"] == step]
    escalations = of(events, "escalate")
    assert int(row["escalations"]) == len(escalations) <= 1
    flint_steps = {e["step"] for e in of(events, "response")}
    assert not flint_steps & {e["step"] for e in acted}  # a step is Jeff's or Flint's, never both
    if escalations:  # from the handover on, every step is Flint's
        assert min(flint_steps, default=escalations[0]["step"]) >= escalations[0]["step"]
    for opinion in of(events, "jeff"):  # his opinions on Flint's commands are the Qwen model's too
        assert opinion["opinion"] or opinion["error"]


def test_jeffs_work_is_in_his_model_time_and_the_floor_and_flints_check_holds(run: tuple[dict[str, str], list]) -> None:
    row, events = run
    jeff_ms = sum(
        e["timings"]["prompt_ms"] + e["timings"]["predicted_ms"] for e in of(events, "jeff_step") if e["timings"]
    )
    assert float(row["jeff_model_s"]) >= round(jeff_ms / 1000, 3) - 0.002 > 0
    assert 0 < float(row["floor_s"]) <= float(row["model_s"]) + 0.002
    assert row["reprocessed_check"] == "ok" and row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"]
