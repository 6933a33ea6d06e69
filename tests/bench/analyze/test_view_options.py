"""`bench view --by SETTING`: the page's groups are compare --by's families, with their sides' verdicts, on the
shipped example (part3 and late of one real CPU bench); and the output paths of view, report and history: one that
cannot be written is one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.analyze.view import view_data
from bench.cli import main
from bench.measure.request_log import load_request_log
from bench.measure.trace import load_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "results" / "example" / "cpu-presets.csv"


def test_view_by_preset_holds_late_against_part3_with_a_verdict_per_metric() -> None:
    data = view_data([str(EXAMPLE)], by="preset")
    (group,) = data["groups"]
    assert [side["file"] for side in group["per_file"]] == ["part3", "late"]
    assert [side["cells"]["runs"] for side in group["per_file"]] == ["4", "4"]
    verdicts = {v["metric"]: v for v in group["verdicts"]}
    assert {v["against"] for v in group["verdicts"]} == {"late vs part3"}
    assert set(verdicts) >= {"completed", "wall_s", "prompt_tokens_reprocessed"}
    assert verdicts["prompt_tokens_reprocessed"]["verdict"] == "beyond noise"
    assert len(data["runs"]) == 8 and all(run["file"] == "cpu-presets.csv" for run in data["runs"])
    assert all(run["steps"] for run in data["runs"])  # each run's folder found beside its file


def test_view_without_by_shows_each_preset_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert [group["verdicts"] for group in view_data([str(EXAMPLE)])["groups"]] == [[], []]
    assert main(["view", str(EXAMPLE), "--by", "colour", "--out", str(tmp_path / "x.html")]) == 2
    assert "--by colour: not a setting" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["view", str(EXAMPLE), "--out", "/proc/none/x.html"], "--out /proc/none/x.html: cannot make the folder"),
        (["view", str(EXAMPLE), "--out", "{tmp}"], "is a folder: name a file in it"),
        (["report", str(EXAMPLE), "--out-dir", "/proc/none"], "--out-dir /proc/none: cannot make the folder"),
        (["history", str(EXAMPLE), "--out-dir", "{tmp}/file"], "is a file: name a folder"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_one_line(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert main([arg.replace("{tmp}", str(tmp_path)) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_run_page_says_what_produced_it_its_prompts_and_each_steps_server_figures() -> None:
    run = view_data([str(EXAMPLE)])["runs"][0]
    assert run["setup"].startswith("model SmolLM2-135M-Instruct.Q4_1.gguf (sha256 b179c9523d0e) · served forced_tools")
    assert " · build b0-unknown · flags none of yours · sampling " in run["setup"]
    first = load_request_log(EXAMPLE.parent / "runs" / run["id"]).bodies[0]["messages"]  # type: ignore[union-attr]
    assert run["system"] == first[0]["content"] and run["task"] == first[1]["content"] and run["task"]
    events = [e for e in load_trace(EXAMPLE.parent / "runs" / run["id"] / "events.jsonl") if e["event"] == "response"]
    for step, event in zip(run["steps"], events, strict=False):
        timings = event["timings"]
        assert (step["anew"], step["cached"]) == (timings["prompt_n"], timings["cache_n"])
        assert step["prefill_s"] == round(timings["prompt_ms"] / 1000, 2)
        assert step["decode_s"] == round(timings["predicted_ms"] / 1000, 2)
