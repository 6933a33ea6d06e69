"""`bench replay` against the scripted server: a run's own policy reproduces what the server computed, other policies
are walked with the same answers, and the output says what a replay cannot know."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from agent.clearing import RequestEstimate, is_placeholder
from agent.cli import main as agent_main
from bench.cli import main as bench_main
from bench.errors import ConfigError
from bench.llama.tokenizer import ServerTokenizer
from bench.replay.policies import parse_policy
from bench.replay.walk import CANNOT_KNOW, load_timeline, replay
from bench.testing import fake_llama


def agent_run(tmp_path: Path, flint: fake_llama.FakeLlama, preset: str, steps: int) -> Path:
    repo, run_dir = tmp_path / "repo", tmp_path / preset
    repo.mkdir(exist_ok=True)
    run_dir.mkdir()
    for i in range(3):
        (repo / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 60)
    argv = [
        "--repo",
        str(repo),
        "--task",
        "read",
        "--flint",
        flint.url,
        "--no-jeff",
        "--approve",
        "no",
        "--max-steps",
        str(steps),
        "--preset",
        preset,
        "--events",
        str(run_dir / "events.jsonl"),
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        agent_main(argv)
    return run_dir


def reads(steps: int) -> list[fake_llama.Reply]:
    return [fake_llama.tool_call("read_file", {"path": f"m{i % 3}.py"}) for i in range(steps)]


@pytest.mark.parametrize("preset", ["part3", "part3+"])
def test_the_runs_own_policy_reproduces_every_measured_prompt_n(tmp_path: Path, preset: str) -> None:
    with fake_llama.FakeLlama(reads(8), n_ctx=4096) as flint:
        run_dir = agent_run(tmp_path, flint, preset, 8)
        timeline = load_timeline(run_dir)
        own = parse_policy("run", timeline.preset, timeline.keep, timeline.clear_at)
        with ServerTokenizer(flint.url) as tokenizer:
            replayed = replay(timeline, own, tokenizer)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert sum(e["event"] == "clear" and e["changed"] > 0 for e in events) == replayed.clearings > 0
    assert replayed.prompt_n == [e["timings"]["prompt_n"] for e in events if e["event"] == "response"]


def test_other_policies_replay_the_same_answers_and_the_output_says_what_it_cannot_know(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_llama.FakeLlama(reads(10), n_ctx=3072) as flint:
        run_dir = agent_run(tmp_path, flint, "part3", 10)
        args = ["replay", str(run_dir), "--flint-url", flint.url, "--csv", str(tmp_path / "replay.csv")]
        for policy in ("run", "none", "before:0.5", "lowwater:0.75:0.5", "after:0.5:keep=1"):
            args += ["--policy", policy]
        assert bench_main(args) == 0
    printed = capsys.readouterr().out
    assert CANNOT_KNOW in printed and "reproduces the measured prompt_n within 2% on 10 of 10 requests" in printed
    with (tmp_path / "replay.csv").open() as f:
        rows = {r["policy"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"run", "none", "before:0.5", "lowwater:0.75:0.5", "after:0.5:keep=1"}
    assert rows["none"]["ended_at"] != "" and rows["none"]["clearings"] == "0"  # without clearing it no longer fits
    assert rows["after:0.5:keep=1"]["ended_at"] == "" and int(rows["after:0.5:keep=1"]["steps"]) == 10


def test_a_low_water_mark_clears_only_down_to_it() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "y" * 3000},
        ]
    estimate = RequestEstimate()
    estimate.measured(6000, messages)  # 6 results of ~1,000 tokens each
    low = [dict(m) for m in messages]
    parse_policy("lowwater:0.9:0.5").clear(low, [], estimate, 8192)
    full = [dict(m) for m in messages]
    parse_policy("before:0.9").clear(full, [], estimate, 8192)
    cleared = [sum(is_placeholder(m["content"]) for m in ms if m["role"] == "tool") for ms in (low, full)]
    assert cleared == [2, 4]  # down to half the window: two results go, not all but the newest two
    assert (estimate.tokens_for(low) or 0) <= 0.5 * 8192


@pytest.mark.parametrize("text", ["before", "after:1.5", "lowwater:0.5:0.7", "sometimes:0.5", "before:x", "run"])
def test_a_policy_that_is_not_one_is_refused_with_the_forms_that_are(text: str) -> None:
    with pytest.raises(ConfigError, match="policy"):
        parse_policy(text)


def test_a_summary_policy_replaces_what_before_clears_and_counts_its_question(tmp_path: Path) -> None:
    with fake_llama.FakeLlama(reads(8), n_ctx=4096) as flint:
        run_dir = agent_run(tmp_path, flint, "part3+", 8)
        timeline = load_timeline(run_dir)
        with ServerTokenizer(flint.url) as tokenizer:
            cleared = replay(timeline, parse_policy("before:0.5"), tokenizer)
            summarized = replay(timeline, parse_policy("summary:200"), tokenizer)
            longer = replay(timeline, parse_policy("summary:600"), tokenizer)
    assert summarized.clearings == cleared.clearings > 0  # at the same moments
    first = next(i for i, (a, b) in enumerate(zip(cleared.prompt_n, summarized.prompt_n, strict=True)) if a != b)
    assert summarized.prompt_n[first] > cleared.prompt_n[first]  # the question, and the block after the task
    assert longer.total > summarized.total > cleared.total


@pytest.mark.parametrize("text", ["summary", "summary:0", "summary:1.5", "summary:200:2", "summary:200:0.5:0.6"])
def test_a_summary_policy_needs_its_size_in_tokens(text: str) -> None:
    with pytest.raises(ConfigError, match="summary:S"):
        parse_policy(text)
