"""The whole agent loop against the real CPU llama-server, read from the real traces of one `python -m bench run`.

The small model never calls a tool of its own accord, so the bench serves it forced to (flint_tools auto,
bench/servers/forced_tools.py): every answer is a tool call on todo_repo's real files and commands. One run per
preset at a 1024-token window, which the task, the tool list and the tool results fill within a few steps, so each
run meets what a GPU run meets except the model's skill: real tool results, Jeff's opinions on real commands,
clearings, the tokens reprocessed after them, the window's end and answers cut by it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.presets import PRESETS
from bench.results.append import read_rows

# One group: the module's one bench run (its fixture) is made once, on one pytest-xdist worker, not once per worker.
pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.xdist_group("cpu-loop")]
ROOT = Path(__file__).resolve().parents[2]
PRESET_NAMES = ["part2", "clearing", "part3", "part3+"]
CTX = 1024
CONFIG = f"""
fixtures: [todo_repo]
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
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Each preset's results row and event trace, from one bench invocation (one server start)."""
    folder = tmp_path_factory.mktemp("cpu-loop")
    (folder / "bench.yaml").write_text(CONFIG)
    out = folder / "results.csv"
    args = [sys.executable, "-m", "bench", "run", "--config", str(folder / "bench.yaml"), "--out", str(out)]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
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
