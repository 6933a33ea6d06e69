"""Each preset against the scripted server, including the failures the article published.

- part2 at 4K: a prose answer cut at the window's end is taken as the answer, pytest passes on the untouched
  repository, and the run reports done (the "fake done"); a cut that the server cannot parse stops the run.
- clearing: the same fake done, with clearing on top.
- part3: the cut answer is dropped and the model is told the window size; clearing keeps the newest two results.
- strict: done only once a non-test file changed and a new test exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_helpers import CALC, RunAgent

from agent import prompts
from agent.clearing import is_placeholder
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

THINKING = "Let me think about how to add sub. First I need to consider the existing structure " * 3


def read(path: str, reasoning: str | None = None) -> fl.Reply:
    return fl.tool_call("read_file", {"path": path}, reasoning=reasoning)


@pytest.mark.parametrize("preset", ["part2", "clearing"])
def test_a_cut_prose_answer_is_taken_as_done_on_an_untouched_repo(run_agent: RunAgent, repo: Path, preset: str) -> None:
    script = [read("calc.py"), read("test_calc.py"), fl.length_cut(THINKING)]
    with FakeLlama(script, n_ctx=4096) as flint:
        run = run_agent(repo, flint.url, "--preset", preset)
    assert run.exit_code == 0 and run.stop["reason"] == "done" and run.stop["steps"] == 3
    assert run.of("response")[-1]["usage"]["total_tokens"] == 4096  # the answer ran to the end of the window
    assert run.of("cut") == [{**run.of("cut")[0], "step": 3, "kind": "length", "dropped": False, "message": None}]
    assert run.of("done_check")[0]["passed"] and run.of("done_check")[0]["summary"].startswith("1 passed")
    assert (repo / "calc.py").read_text() == CALC  # nothing was done, yet the run says done
    assert [e["reason"] for e in run.of("clear")] == ([] if preset == "part2" else ["threshold"])


def test_part2_runs_the_tool_calls_of_a_cut_answer(run_agent: RunAgent, repo: Path) -> None:
    cut = fl.length_cut("Writing the file now", calls=[("write_file", {"path": "notes.txt", "content": "half"})])
    with FakeLlama([cut, fl.prose("done")]) as flint:
        run = run_agent(repo, flint.url, "--preset", "part2")
    assert run.of("cut")[0]["dropped"] is False and run.of("tool")[0]["name"] == "write_file"
    assert (repo / "notes.txt").read_text() == "half" and run.stop["steps"] == 2


@pytest.mark.parametrize("preset", ["part2", "clearing"])
@pytest.mark.parametrize("old", [True, False])
def test_an_unparsed_cut_stops_part2_with_server_error(run_agent: RunAgent, repo: Path, preset: str, old: bool) -> None:
    with FakeLlama([read("calc.py"), fl.parse_failure(old=old)]) as flint:
        run = run_agent(repo, flint.url, "--preset", preset)
    assert run.exit_code == 1 and run.stop["reason"] == "server_error" and run.stop["steps"] == 2
    [cut] = run.of("cut")
    assert (cut["kind"], cut["dropped"]) == ("unparsed", False)
    assert cut["message"] == (fl.OLD_PARSE_MESSAGE if old else fl.NEW_PARSE_MESSAGE)
    assert run.of("http_error")[0]["status"] == 500 and not run.of("done_check")


@pytest.mark.parametrize("preset", ["part3", "strict"])
def test_part3_drops_a_cut_answer_and_tells_the_model_the_window(run_agent: RunAgent, repo: Path, preset: str) -> None:
    with FakeLlama([read("calc.py"), fl.length_cut(THINKING), fl.prose("stop")], n_ctx=4096) as flint:
        run = run_agent(repo, flint.url, "--preset", preset, "--max-steps", "3")
        before_cut, after_cut = flint.requests[1]["messages"], flint.requests[2]["messages"]
    [cut] = run.of("cut")
    assert (cut["step"], cut["kind"], cut["dropped"]) == (2, "length", True)
    assert after_cut[:-1] == before_cut  # the cut answer is not in the conversation
    assert after_cut[-1] == {"role": "user", "content": prompts.cut_off_note(4096)}
    assert "4096-token" in after_cut[-1]["content"] and "edit_file" in after_cut[-1]["content"]
    assert not any(e["step"] == 2 for e in run.of("done_check"))  # a cut answer never reaches the done check


@pytest.mark.parametrize("old", [True, False])
def test_part3_drops_an_unparsed_answer_and_goes_on(run_agent: RunAgent, repo: Path, old: bool) -> None:
    with FakeLlama([fl.parse_failure(old=old), fl.prose("finished")], n_ctx=8192) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
        second = flint.requests[1]["messages"]
    assert run.stop["reason"] == "done" and run.stop["steps"] == 2
    assert run.of("cut")[0]["kind"] == "unparsed" and run.of("cut")[0]["dropped"] is True
    assert second[-1]["content"] == prompts.cut_off_note(8192)


def make_big_file(repo: Path) -> None:
    (repo / "big.py").write_text("".join(f"VALUE_{i} = {i}  # filler to take room\n" for i in range(80)))


def test_clearing_past_half_the_window_keeps_the_newest_two_results(run_agent: RunAgent, repo: Path) -> None:
    make_big_file(repo)
    script = [
        fl.tool_call("write_file", {"path": "notes.txt", "content": "N" * 900}, reasoning="Write notes first."),
        read("big.py", reasoning="Read the big file."),
        read("calc.py", reasoning="Now calc."),
        read("calc.py", reasoning="Once more."),
        read("big.py", reasoning="Again."),
        fl.prose("done"),
    ]
    with FakeLlama(script, n_ctx=2560) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
        requests, responses = flint.requests, flint.responses
    # the last clearing that a request followed: by then the write result and the first read are old
    clear = [e for e in run.of("clear") if e["changed"] > 0 and e["step"] < len(requests)][-1]
    assert clear["reason"] == "threshold" and clear["total_tokens"] > 1280
    step = clear["step"]  # it cleared when the answer to request `step` came back
    at_clear = [m for m in requests[step - 1]["messages"] if m["role"] == "tool"]
    after = requests[step]["messages"]
    results = [m["content"] for m in after if m["role"] == "tool"]
    old = len(at_clear) - 2
    assert old > 0 and [is_placeholder(r) for r in results] == [True] * old + [False] * (len(results) - old)
    assert results[old : old + 2] == [m["content"] for m in at_clear[-2:]]
    assert prompts.cleared_tool_result(len((repo / "big.py").read_text())) in results
    write_call = after[2]["tool_calls"][0]["function"]
    assert json.loads(write_call["arguments"]) == {"path": "notes.txt", "content": prompts.cleared_argument(900)}
    assert "reasoning_content" not in after[2] and after[-2].get("reasoning_content") is not None
    assert [m["role"] for m in after[: len(requests[step - 1]["messages"])]] == [
        m["role"] for m in requests[step - 1]["messages"]
    ]
    # a clearing that changed the start of the prompt made the server reprocess most of it; one that changed
    # nothing left the prompt cache alone
    assert responses[step]["timings"]["prompt_n"] > responses[step]["usage"]["prompt_tokens"] / 2
    idle = next(e for e in run.of("clear") if e["changed"] == 0)
    assert responses[idle["step"]]["timings"]["prompt_n"] < responses[idle["step"]]["usage"]["prompt_tokens"] / 20


def test_part2_never_clears(run_agent: RunAgent, repo: Path) -> None:
    make_big_file(repo)
    with FakeLlama([read("big.py"), read("big.py"), read("big.py"), fl.prose("done")], n_ctx=4096) as flint:
        run = run_agent(repo, flint.url, "--preset", "part2")
        last = flint.requests[-1]["messages"]
    assert run.of("clear") == [] and run.stop["reason"] == "done"
    assert not any(is_placeholder(m["content"]) for m in last if m["role"] == "tool")


def test_a_context_400_clears_and_retries_the_same_step(run_agent: RunAgent, repo: Path) -> None:
    make_big_file(repo)
    script = [read("big.py"), read("calc.py"), read("big.py"), fl.context_error(), fl.prose("done")]
    with FakeLlama(script, n_ctx=32768) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
        retry = flint.requests[4]["messages"]
    [error] = run.of("http_error")
    assert (error["step"], error["status"], error["type"]) == (4, 400, "exceed_context_size_error")
    assert error["n_ctx"] == 32768 and error["n_prompt_tokens"] > 0
    [clear] = run.of("clear")
    assert (clear["step"], clear["reason"], clear["total_tokens"]) == (4, "context_400", None) and clear["changed"] > 0
    assert [e["step"] for e in run.of("response")] == [1, 2, 3, 4]  # the retry is the same step
    assert is_placeholder([m for m in retry if m["role"] == "tool"][0]["content"])
    assert run.stop["reason"] == "done" and run.stop["steps"] == 4


def test_a_second_400_with_nothing_left_to_clear_stops(run_agent: RunAgent, repo: Path) -> None:
    script = [read("calc.py"), read("calc.py"), read("calc.py"), fl.context_error(), fl.context_error()]
    with FakeLlama(script, n_ctx=32768) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
    assert [c["changed"] > 0 for c in run.of("clear")] == [True, False]
    assert len(run.of("http_error")) == 2
    assert run.exit_code == 1 and run.stop["reason"] == "context_exhausted" and run.stop["steps"] == 4
    assert "nothing is left to clear" in run.stop["message"]


def test_a_prompt_that_never_fits_stops_with_context_exhausted(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama([fl.prose("never sent")], n_ctx=256) as flint:  # the tool list alone is bigger than that
        run = run_agent(repo, flint.url, "--preset", "strict")
    assert run.stop["reason"] == "context_exhausted" and run.stop["steps"] == 1
    assert [c["changed"] for c in run.of("clear")] == [0] and run.of("http_error")[0]["n_ctx"] == 256


def test_part2_stops_at_a_400_without_clearing(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama([read("calc.py"), read("calc.py"), read("calc.py"), fl.context_error()]) as flint:
        run = run_agent(repo, flint.url, "--preset", "part2")
    assert run.stop["reason"] == "context_exhausted" and run.of("clear") == []
    assert len(flint.requests) == 4


def test_strict_refuses_done_until_code_changed_and_a_test_was_added(run_agent: RunAgent, repo: Path) -> None:
    sub = CALC + "\n\ndef sub(a, b):\n    return a - b\n"
    test = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"
    script = [
        fl.prose("All done."),
        fl.tool_call("write_file", {"path": "calc.py", "content": sub}),
        fl.prose("Done now."),
        fl.tool_call("write_file", {"path": "test_sub.py", "content": test}),
        fl.prose("Really done."),
    ]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url, "--preset", "strict")
        feedback = [r["messages"][-1]["content"] for r in (flint.requests[1], flint.requests[3])]
    assert [c["missing"] for c in run.of("done_check")] == [
        [prompts.MISSING_CHANGE, prompts.MISSING_TEST],
        [prompts.MISSING_TEST],
        [],
    ]
    assert all(c["pytest_exit"] == 0 for c in run.of("done_check"))
    assert feedback == [
        prompts.not_done_yet([prompts.MISSING_CHANGE, prompts.MISSING_TEST]),
        prompts.not_done_yet([prompts.MISSING_TEST]),
    ]
    assert run.exit_code == 0 and run.stop["reason"] == "done" and run.stop["steps"] == 5


def test_part3_accepts_an_uncut_done_on_an_untouched_repo(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama([fl.prose("All done.")]) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
    assert run.stop["reason"] == "done" and run.stop["steps"] == 1  # what strict exists to catch


def test_failing_tests_go_back_to_the_model_until_they_pass(run_agent: RunAgent, repo: Path) -> None:
    broken = "def add(a, b):\n    return a * b\n"
    script = [
        fl.tool_call("write_file", {"path": "calc.py", "content": broken}),
        fl.prose("Done."),
        fl.tool_call("edit_file", {"path": "calc.py", "old": "a * b", "new": "a + b"}),
        fl.prose("Fixed."),
    ]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3")
        told = flint.requests[2]["messages"][-1]
    first, second = run.of("done_check")
    assert (first["passed"], first["pytest_exit"]) == (False, 1) and "1 failed" in first["summary"]
    assert told["role"] == "user" and "do not pass" in told["content"] and "assert 2 == 3" in told["content"]
    assert second["passed"] and run.stop["reason"] == "done"


def test_the_step_limit_stops_the_run(run_agent: RunAgent, repo: Path) -> None:
    with FakeLlama([read("calc.py")] * 10) as flint:
        run = run_agent(repo, flint.url, "--max-steps", "3")
    assert run.exit_code == 1 and run.stop["reason"] == "step_limit" and run.stop["steps"] == 3
    assert len(flint.requests) == 3
