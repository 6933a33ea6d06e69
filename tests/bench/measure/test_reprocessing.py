"""Where reprocessed tokens came from (bench/measure/reprocessing.py): each cause forced with the scripted server,
whose prompt cache is a longest common prefix of characters and whose tokenizer is one token per 4 characters, and
the split checked against it: the causes add up to prompt_n on every request, and the forced one is where it shows."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main as agent_main
from bench.llama.tokenizer import ServerTokenizer
from bench.measure.reprocessing import CAUSES, Attribution, attribute, split_positions
from bench.measure.request_log import load_request_log
from bench.testing import fake_llama

BIG = "x = 1\n" * 400
READ = fake_llama.tool_call("read_file", {"path": "calc.py"})


def run_and_split(tmp_path: Path, flint: fake_llama.FakeLlama, *args: str) -> Attribution:
    """The agent run to its step limit (every reply calls a tool or is cut: no done check), then split."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "big.py").write_text(BIG)
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    events = tmp_path / "events.jsonl"
    argv = [
        "--repo",
        str(repo),
        "--task",
        "Add sub.",
        "--flint",
        flint.url,
        "--events",
        str(events),
        "--no-jeff",
        "--approve",
        "no",
        *args,
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        agent_main(argv)
    trace = [json.loads(line) for line in events.read_text().splitlines()]
    tokenizer = ServerTokenizer(flint.url)
    result = attribute(trace, load_request_log(tmp_path), tokenizer)
    tokenizer.close()
    responses = [e for e in trace if e["event"] == "response"]
    assert result.status == "ok", result.note
    assert [r.request for r in result.requests] == [e["request"] for e in responses]
    for split, response in zip(result.requests, responses, strict=True):
        assert sum(split.split.values()) == response["timings"]["prompt_n"]  # the causes add up, request by request
        assert split.counted == split.prompt_tokens == response["usage"]["prompt_tokens"]
    return result


def only(result: Attribution, index: int) -> dict[str, int]:
    return {cause: n for cause, n in result.requests[index].split.items() if n}


def test_the_first_request_is_cold_and_tool_results_are_new(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([READ, READ]) as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "2")
    assert set(only(result, 0)) == {"cold"}
    # The answer came back as generated: only the tool result is new (but for the one token where the answer's end
    # is found: the next message's opening, which any two messages share).
    assert set(only(result, 1)) <= {"new", "answer"} and result.requests[1].split["answer"] <= 1
    totals = result.totals()
    assert totals is not None and totals["cold"] == result.requests[0].prompt_tokens


def test_a_clearing_costs_the_material_after_the_first_message_it_changed(tmp_path: Path) -> None:
    replies = [fake_llama.tool_call("read_file", {"path": "big.py"}) for _ in range(6)]
    with fake_llama.FakeLlama(replies, n_ctx=4096) as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "6")
        bodies = flint.requests
    cleared = [i for i, r in enumerate(result.requests) if r.split["clearing"]]
    assert cleared
    for i in cleared:
        # Reused: up to the first changed message; the old material after it is the clearing's.
        before, now = bodies[i - 1]["messages"], bodies[i]["messages"]
        first = next(k for k, (a, b) in enumerate(zip(before, now, strict=False)) if a != b)
        upto = [len(fake_llama.render_prompt({**bodies[i], "messages": now[:k]})) // 4 for k in (first, first + 1)]
        assert upto[0] <= result.requests[i].cache_n < upto[1]  # the reuse ends inside the first changed message
        assert set(only(result, i)) <= {"clearing", "new", "answer"} and result.requests[i].split["unexplained"] == 0
    assert not any(r.split["clearing"] for i, r in enumerate(result.requests) if i not in cleared)


def test_an_answer_sent_back_otherwise_than_generated_is_the_answers_cost(tmp_path: Path) -> None:
    """The agent sends arguments that are not a JSON object back as {}: the tokens generated no longer match."""
    replies = [fake_llama.tool_call("read_file", '{"path": "calc.py", oops'), READ]
    with fake_llama.FakeLlama(replies) as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "2")
    assert result.requests[1].split["answer"] > 0
    assert set(only(result, 1)) == {"answer", "new"}


def test_earlier_reasoning_the_template_drops_is_the_templates_cost(tmp_path: Path) -> None:
    """A template that keeps reasoning only after the last user message: the note after a dropped cut answer makes
    the first answer's reasoning vanish from the prompt, though the agent sent it back unchanged."""
    replies = [
        fake_llama.tool_call("read_file", {"path": "calc.py"}, reasoning="Let me look at calc.py first. " * 8),
        fake_llama.length_cut("I will start by", completion_tokens=8),
        READ,
    ]
    with fake_llama.FakeLlama(replies, reasoning_history="last_turn") as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "3")
    assert result.requests[2].split["template"] > 0
    assert set(only(result, 2)) <= {"template", "new"}
    assert all(r.split["template"] == 0 for r in result.requests[:2])


def test_a_cache_the_server_lost_is_unexplained(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([READ, {**READ, "forget": True}, READ]) as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "3")
    lost = result.requests[1]
    assert lost.cache_n == 0 and lost.split["unexplained"] >= result.requests[0].prompt_tokens - 1
    assert result.requests[2].split["unexplained"] == 0


def test_a_dropped_cut_answer_costs_no_reprocessing(tmp_path: Path) -> None:
    """part3 drops a cut answer and adds a note: the answer's tokens are never sent again, so nothing is recomputed
    but the note (its cost is the generation spent on the answer)."""
    with fake_llama.FakeLlama([fake_llama.length_cut("I will start by", completion_tokens=8), READ]) as flint:
        result = run_and_split(tmp_path, flint, "--preset", "part3", "--max-steps", "2")
    assert set(only(result, 1)) == {"new"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((5, 20, 10, 10, 8, 12, False), {"new": 8, "answer": 2, "unexplained": 5}),  # extension, cache lost
        ((4, 20, 4, 10, 4, 6, False), {"answer": 2, "new": 14}),  # the prompts part where the answer begins
        ((3, 20, 3, 10, 8, 12, True), {"clearing": 9, "new": 8}),  # a clearing: the old part and the answer
        ((19, 20, 20, 20, 20, 20, False), {"new": 1}),  # all cached: one token computed anyway
    ],
)
def test_positions_split_by_region(args: tuple[Any, ...], expected: dict[str, int]) -> None:
    split = split_positions(*args)
    assert {k: v for k, v in split.items() if v} == {k: v for k, v in expected.items() if v}
    assert sum(split.values()) == args[1] - args[0] and set(split) == set(CAUSES)


def test_a_run_without_a_request_log_is_not_split_and_not_an_error() -> None:
    """A scripted or older agent keeps no request log: the causes stay empty (not measured), no note for `error`."""
    trace = [{"event": "response", "step": 1, "request": 0, "timings": {"cache_n": 0, "prompt_n": 9}}]
    result = attribute(trace, None, ServerTokenizer("http://127.0.0.1:9"))
    assert (result.status, result.note, result.totals()) == ("no log", None, None)
