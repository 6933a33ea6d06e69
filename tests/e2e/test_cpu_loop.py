"""The whole agent loop against the real CPU llama-server, read from the real traces of one `python -m bench run`.

The small model never calls a tool of its own accord, so the bench serves it forced to (flint_tools auto,
bench/llama/forced_tools.py): every answer is a tool call on the task's real files and commands. One run per
preset at a 768-token window, which the task, the tool list and the tool results fill within a few steps, so each
run meets what a GPU run meets except the model's skill: real tool results, Jeff's opinions on real commands,
clearings, the tokens reprocessed after them, the window's end and answers cut by it.

The task is the suite's small one (tests/small_task.py): nothing here reads a task's grading, and its shorter text
and window make every step's prompt shorter (the clearing presets compute most of it anew each step) while the
window still ends within the step limit.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from small_task import NAME
from small_task import ROOT as TASKS

from agent.presets import PRESETS
from bench.cli import main as bench_main
from bench.replay.command import tokenizer_for
from bench.replay.policies import parse_policy
from bench.replay.walk import load_timeline, replay
from bench.results.append import read_rows

# One group: the module's one bench run (its fixture) is made once, on one pytest-xdist worker, not once per worker.
pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("cpu-loop")]
ROOT = Path(__file__).resolve().parents[2]
PRESET_NAMES = ["part2", "clearing", "part3", "part3+"]
CTX = 768
CONFIG = f"""
fixtures_root: {TASKS}
fixtures: [{NAME}]
presets: [{", ".join(PRESET_NAMES)}]
ctx: [{CTX}]
reps: 1
max_steps: 12
sandbox: local
servers: embedded
jeff_ctx: 1024
"""

Run = tuple[dict[str, str], list[dict[str, Any]]]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results CSV of one bench invocation (one server start), its runs' folders beside it in runs/."""
    folder = tmp_path_factory.mktemp("cpu-loop")
    (folder / "bench.yaml").write_text(CONFIG)
    out = folder / "results.csv"
    args = [sys.executable, "-m", "bench", "run", "--config", str(folder / "bench.yaml"), "--out", str(out)]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def runs(results: Path) -> dict[str, Run]:
    """Each preset's results row and event trace."""
    out = results
    found = {}
    for row in read_rows(out):
        trace = out.parent / "runs" / row["run_id"] / "events.jsonl"
        found[row["preset"]] = (row, [json.loads(line) for line in trace.read_text().splitlines()])
    assert sorted(found) == sorted(PRESET_NAMES)
    return found


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind]


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_answer_is_a_real_tool_call_with_a_real_result(runs: dict[str, Run], preset: str) -> None:
    row, events = runs[preset]
    assert row["flint_serving"] == "forced_tools" and row["error"] == "", row["error"]
    assert int(row["steps"]) >= 3
    responses = of(events, "response")
    assert all(r["tool_calls"] == 1 and r["content_chars"] == 0 for r in responses)
    assert {r["finish_reason"] for r in responses} <= {"tool_calls", "length"}
    tools = of(events, "tool")
    assert tools and all(t["result_chars"] > 0 for t in tools)
    ran = [t for t in tools if t["ok"]]
    assert ran and all(t["args"]["command"] or t["args"]["path"] for t in ran if t["args"])
    # Jeff gives his opinion on each command before it runs, in words of his own.
    opinions = {e["step"]: e for e in of(events, "jeff")}
    for tool in (t for t in ran if t["name"] == "run"):
        assert opinions[tool["step"]]["command"] == tool["args"]["command"]
        assert len(opinions[tool["step"]]["opinion"].split()) >= 3
    assert of(events, "done_check") == []  # every answer a call: nothing to take as "done"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_the_run_ends_at_the_window_or_the_step_limit_never_done(runs: dict[str, Run], preset: str) -> None:
    row, events = runs[preset]
    assert row["stop_reason"] in ("context_exhausted", "step_limit")
    assert of(events, "stop")[0]["reason"] == row["stop_reason"]
    if row["stop_reason"] == "context_exhausted":
        assert of(events, "http_error")[-1]["type"] == "exceed_context_size_error"
    window = max(r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"] for r in of(events, "response"))
    assert window >= CTX * 0.9  # the window filled


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_clearings_where_the_preset_clears_and_the_tokens_reprocessed_after_them(
    runs: dict[str, Run], preset: str
) -> None:
    row, events = runs[preset]
    changed = [e for e in of(events, "clear") if e["changed"]]
    if not PRESETS[preset].clears:
        assert of(events, "clear") == [] and row["clearings"] == "0"
    else:
        assert changed and int(row["clearings"]) >= 1
    # Per request: what Flint computed anew, the cached prefix and the prompt add up; after a clearing that changed
    # an earlier message, the cache reaches no further than the change, so more than the new material is reprocessed.
    responses = of(events, "response")
    for r in responses:
        assert r["timings"]["prompt_n"] + r["timings"]["cache_n"] == r["usage"]["prompt_tokens"]
    for clear in changed:
        before = [r for r in responses if r["t"] <= clear["t"]][-1]
        after = next((r for r in responses if r["t"] > clear["t"]), None)
        if after is not None:
            assert after["timings"]["cache_n"] < before["usage"]["prompt_tokens"]
    # Per run: the trace's sum equals Flint's own /metrics counter.
    assert int(row["prompt_tokens_reprocessed"]) == sum(r["timings"]["prompt_n"] for r in responses)
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] and row["reprocessed_check"] == "ok"


def test_answers_cut_by_the_window_are_handled_as_each_preset_says(runs: dict[str, Run]) -> None:
    """Whether a run meets a cut depends on where its last answer meets the window, which moves with the length of
    tool output (temp paths, timings): so every cut that happened is checked, and the guarantee that each preset
    meets every shape of cut comes from the real server's bodies (tests/integration/test_cut_bodies_real.py, played
    back in tests/agent/test_agent_cut_answers.py)."""
    for preset, (row, events) in runs.items():
        cuts = of(events, "cut")
        assert int(row["cut_answers"]) == len(cuts)
        for cut in cuts:
            response = [r for r in of(events, "response") if r["step"] == cut["step"]][-1]
            assert response["finish_reason"] == "length" and cut["kind"] == "length"
            assert response["usage"]["prompt_tokens"] + response["usage"]["completion_tokens"] == CTX
            assert cut["dropped"] is PRESETS[preset].drops_cut
            tools = [t for t in of(events, "tool") if t["step"] == cut["step"]]
            if cut["dropped"]:  # part3: nothing of the answer runs, the note goes out with the next request
                assert tools == []
                following = [e for e in events if e.get("step") == cut["step"] + 1 and "messages" in e]
                assert following and following[0]["messages"] == response["messages"] + 1
            else:  # part2: the cut call runs as it came, its truncated arguments get the tool's error
                assert len(tools) == 1 and (tools[0]["ok"] or "not valid JSON" in tools[0]["error"])


CAUSE_COLUMNS = [
    "reprocessed_cold",
    "reprocessed_new",
    "reprocessed_answer",
    "reprocessed_by_clearing",
    "reprocessed_by_template",
    "reprocessed_unexplained",
]


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_every_reprocessed_token_has_a_cause_and_almost_none_is_unexplained(runs: dict[str, Run], preset: str) -> None:
    """Counted with the real server's tokenizer, the causes add up to what the server computed, request by request;
    the real server loses nothing it had cached (no sliding window here), so nothing is left unexplained."""
    row, events = runs[preset]
    assert row["reprocessed_split"] == "ok", row["error"]
    causes = {column: int(row[column]) for column in CAUSE_COLUMNS}
    assert sum(causes.values()) == int(row["prompt_tokens_reprocessed"])
    assert causes["reprocessed_unexplained"] <= 0.01 * int(row["prompt_tokens_reprocessed"])
    assert causes["reprocessed_cold"] == of(events, "response")[0]["timings"]["prompt_n"]
    assert (causes["reprocessed_by_clearing"] > 0) == (int(row["clearings"]) > 0)
    assert (row["swa_full"], row["ctx_checkpoints"], row["cache_reuse"], row["cache_ram_mib"]) == (
        "false",
        "32",
        "0",
        "0",
    )


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_wall_time_is_flint_jeff_tools_stalls_and_the_harness_and_the_floor_is_below_it(
    runs: dict[str, Run], preset: str
) -> None:
    row, _ = runs[preset]
    parts = [float(row[c]) for c in ("flint_model_s", "jeff_model_s", "tools_s", "server_stall_s", "own_s")]
    assert abs(sum(parts) - float(row["wall_s"])) <= 0.01 and min(parts) >= 0
    assert abs(float(row["flint_model_s"]) + float(row["jeff_model_s"]) - float(row["model_s"])) <= 0.002
    assert float(row["own_s"]) < 0.2 * float(row["wall_s"])  # the harness's own share is small; tools are apart
    assert float(row["flint_prompt_tps"]) > 0 and float(row["jeff_gen_tps"]) > 0
    assert float(row["floor_s"]) > 0 and 0 < float(row["efficiency"]) < 1
    # Each server's model time is its prefill and its decode, from the same timings (within 1%: each is rounded).
    for who in ("flint", "jeff"):
        parts = float(row[f"{who}_prompt_s"]) + float(row[f"{who}_gen_s"])
        assert abs(parts - float(row[f"{who}_model_s"])) <= 0.01 * float(row[f"{who}_model_s"])
    # The floor is llama-bench's for this build, model and settings; the server's overhead is the rest of the model
    # time, and Flint's requests spent a little time outside the server's timings (HTTP, JSON, the template).
    assert row["floor_method"] == "llama-bench"
    assert row["floor_depths"] == "0 384"  # llama-bench at the depths the requests reach: half of CTX on a CPU
    assert float(row["server_overhead_s"]) == pytest.approx(float(row["model_s"]) - float(row["floor_s"]), abs=0.002)
    assert 0 <= float(row["flint_http_s"]) < float(row["own_s"])


def test_replaying_each_runs_own_policy_reproduces_what_the_server_computed(results: Path) -> None:
    """Each run replayed under its own policy, its prompts counted by a fresh server with the same template: per
    request within 2% of the prompt_n the bench's server measured."""
    run_dirs = sorted(p for p in (results.parent / "runs").iterdir() if (p / "events.jsonl").is_file())
    assert len(run_dirs) == len(PRESET_NAMES)
    with tokenizer_for(run_dirs, None, ROOT) as tokenizer:
        for run_dir in run_dirs:
            timeline = load_timeline(run_dir)
            replayed = replay(
                timeline, parse_policy("run", timeline.preset, timeline.keep, timeline.clear_at), tokenizer
            )
            assert replayed.ended_at is None and len(replayed.prompt_n) == len(timeline.steps)
            for mine, measured in zip(replayed.prompt_n, replayed.measured, strict=True):
                assert measured is not None and abs(mine - measured) <= 0.02 * measured, (run_dir.name, mine, measured)


def test_a_run_sent_again_to_its_own_server_reproduces_every_prompt_n_and_two_flag_sets_pair_by_request(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """part2's run (it clears, and computes the fewest tokens: the cheapest pass), sent to servers started from its own
    recorded command line: with --cache-reuse 0 (its own setting) every recorded prompt_n comes back exactly;
    --cache-reuse 256 is compared with it request by request. One run, two passes: each costs about the run's own
    Flint time."""
    run_dir = next(p for p in (results.parent / "runs").iterdir() if "-part2-" in p.name)
    out = tmp_path / "replayed.csv"
    args = [
        "replay",
        str(run_dir),
        "--against",
        "embedded",
        "--server-args",
        "--cache-reuse 0",
        "--server-args",
        "--cache-reuse 256",
        "--csv",
        str(out),
    ]
    assert bench_main(args) == 0
    printed = capsys.readouterr().out
    with out.open() as f:
        rows = [r for r in csv.DictReader(f)]
    own = [r for r in rows if r["target"] == "embedded --cache-reuse 0" and r["recorded_prompt_n"]]
    assert own and all(r["prompt_n"] == r["recorded_prompt_n"] for r in own), printed
    assert all(float(r["prompt_ms"]) > 0 and float(r["predicted_ms"]) > 0 for r in own)
    assert f"prompt_n as recorded on {len(own)} of {len(own)} requests" in printed
    paired = printed.split("## Paired by request")[1]
    assert "| embedded --cache-reuse 256 | tokens computed anew |" in paired
