"""The summary presets (agent/summary.py): what the summary replaces, that calls keep their results, the loop guard,
and runs against the scripted server (Flint writing, Jeff writing, hybrid clearing first)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agent_helpers import AgentProcess, RunAgent

from agent import prompts
from agent.clearing import ROOM_ONLY, clear_old, is_placeholder
from agent.summary import SUMMARY_AT, propose_dropping, propose_replacing
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

SUMMARY = "calc.py adds; big files hold records."


def conversation(results: list[str]) -> list[dict[str, Any]]:
    """The system prompt and task, then one read_file call and its result per text in `results`."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    for i, text in enumerate(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
        messages.append({"role": "assistant", "content": "", "reasoning_content": "hm", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": text})
    return messages


def paired(messages: list[dict[str, Any]]) -> bool:
    """Every call has its result right after its message, and every result answers a call."""
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return calls == results


def test_the_summary_replaces_exactly_what_a_clearing_would() -> None:
    messages = conversation(["x" * 500, "Error: no", "y" * 300, "z" * 400, "w" * 400])
    cleared = copy.deepcopy(messages)
    clear_old(cleared, keep=2, how=ROOM_ONLY)
    proposal = propose_replacing(messages, keep=2, done_outputs=[])
    assert proposal is not None
    changed = [i for i, (a, b) in enumerate(zip(messages, cleared, strict=True)) if a != b]
    summarized = [i for i, (a, b) in enumerate(zip(messages, proposal.messages, strict=True)) if a != b]
    assert summarized == changed == [2, 3, 4, 6, 7, 8]  # the short error (position 5) is not made smaller: kept
    assert proposal.messages[3]["content"] == prompts.summarized_tool_result(500)
    assert all(proposal.messages[i] == messages[i] for i in (0, 1, 5, 9, 10, 11))  # task, error, newest two
    assert "x" * 500 in proposal.material and "Error: no" not in proposal.material
    assert paired(proposal.messages)


def test_room_only_clearing_leaves_what_the_placeholder_would_not_shrink() -> None:
    messages = conversation(["short", "s" * 200, "a", "b"])
    article = copy.deepcopy(messages)
    clear_old(article, keep=2)
    clear_old(messages, keep=2, how=ROOM_ONLY)
    assert article[3]["content"] == prompts.cleared_tool_result(5)  # the article's makes it 15 times longer
    assert messages[3]["content"] == "short" and messages[5]["content"] == prompts.cleared_tool_result(200)
    edit = {"name": "edit_file", "arguments": json.dumps({"path": "p", "old": "a", "new": "b"})}
    assert clear_old([{"role": "assistant", "tool_calls": [{"function": edit}]}], keep=0, how=ROOM_ONLY) == 0


def test_hybrid_drops_whole_turns_only() -> None:
    messages = conversation(["a" * 100, "b" * 100, "c" * 100, "d" * 100])
    two_calls = messages[2]["tool_calls"] + [{**messages[4]["tool_calls"][0], "id": "extra"}]
    messages[2] = {**messages[2], "tool_calls": two_calls}
    messages.insert(4, {"role": "tool", "tool_call_id": "extra", "content": "e" * 50})
    proposal = propose_dropping(messages, keep=2, summary_at=None)
    assert proposal is not None and paired(proposal.messages)
    assert [m["content"] for m in proposal.messages if m["role"] == "tool"] == ["c" * 100, "d" * 100]
    assert proposal.kept == [0, 1, 7, 8, 9, 10]


class SummarizingLlama(FakeLlama):
    """The scripted server, answering the summary question with `summary` (outside the script)."""

    def __init__(self, *args: Any, summary: fl.Reply, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.summary = summary
        self.asked = 0

    def next_reply(self, body: dict[str, Any]) -> tuple[fl.Reply, int]:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == prompts.summary_request(prompts.SUMMARY_TOKENS, 2):
            with self.lock:
                self.requests.append(body)
                self.asked += 1
            assert body["max_tokens"] == prompts.SUMMARY_TOKENS
            return self.summary, fl.count_tokens(self.render(body))
        return super().next_reply(body)


def big_reads(repo: Path, count: int) -> list[fl.Reply]:
    for i in range(count):
        (repo / f"big{i}.py").write_text("".join(f"RECORD_{j} = {j}  # filler to take up room\n" for j in range(40)))
    return [fl.tool_call("read_file", {"path": f"big{i}.py"}) for i in range(count)]


def test_flint_summarizes_what_part3_plus_would_clear(run_agent: RunAgent, repo: Path) -> None:
    script = big_reads(repo, 5)
    with SummarizingLlama(script, n_ctx=4096, summary=fl.prose(SUMMARY), default=fl.prose("done")) as flint:
        run = run_agent(repo, flint.url, "--preset", "summary", "--max-steps", "6")
    summaries = run.of("summary")
    assert summaries and all(s["applied"] and s["by"] == "flint" for s in summaries)
    assert summaries[0]["total_tokens"] > 2048 and summaries[0]["timings"]["prompt_n"] > 0
    assert run.of("clear") == []  # summarized, not cleared
    asked = next(i for i, r in enumerate(flint.requests) if "max_tokens" in r)
    question, sent = flint.requests[asked], flint.requests[asked + 1]["messages"]
    assert question["tools"] == prompts.TOOL_SPECS  # the conversation as it was, so the server's cache covers it
    before = flint.requests[asked - 1]["messages"]
    assert question["messages"][: len(before)] == before
    assert sent[1]["content"] == "Add sub(a, b) to calc.py." and sent[SUMMARY_AT]["content"].endswith(SUMMARY)
    tool_results = [m["content"] for m in sent if m["role"] == "tool"]
    assert all(is_placeholder(t) and "into the summary" in t for t in tool_results[:-2])
    assert all(not is_placeholder(t) for t in tool_results[-2:]) and paired(sent)


def test_a_summary_that_does_not_shrink_is_not_asked_twice(run_agent: RunAgent, repo: Path) -> None:
    # After the big reads, reads of a tiny file: a placeholder would not shrink them, so they are no material, and
    # from step 8 on the material is what it was at step 7.
    (repo / "t.py").write_text("x = 1\n")
    script = [*big_reads(repo, 4), *[fl.tool_call("read_file", {"path": "t.py"})] * 5]
    long = fl.prose("words " * 3000)
    with SummarizingLlama(script, n_ctx=4096, summary=long, default=fl.prose("done")) as flint:
        run = run_agent(repo, flint.url, "--preset", "summary", "--max-steps", "9")
    summaries = run.of("summary")
    assert [(s["step"], s["applied"]) for s in summaries] == [(5, False), (6, False), (7, False)]
    assert flint.asked == 3 and len({s["material_chars"] for s in summaries}) == 3  # new material each time
    assert run.stop["reason"] == "step_limit"  # the run went on, with its material untouched
    assert not any(is_placeholder(m.get("content")) for m in flint.requests[-1]["messages"] if m["role"] == "tool")


def test_no_summary_is_asked_while_even_an_empty_one_would_not_shrink_the_conversation(
    run_agent: RunAgent, repo: Path
) -> None:
    # Each read's result is a few characters longer than its placeholder: too little, summed, for the summary's own
    # message, so nothing a model could write would make the request smaller.
    text = "x" * (len(prompts.summarized_tool_result(99)) + 4)
    (repo / "t.py").write_text(text)
    script = [fl.tool_call("read_file", {"path": "t.py"})] * 6
    with SummarizingLlama(script, n_ctx=1024, summary=fl.prose(SUMMARY), default=fl.prose("done")) as flint:
        run = run_agent(repo, flint.url, "--preset", "summary", "--max-steps", "6")
    assert flint.asked == 0 and run.of("summary") == []
    assert run.stop["reason"] == "step_limit"  # the run went on, its conversation untouched


def test_jeff_writes_the_summary_in_summary_jeff(run_agent: RunAgent, repo: Path) -> None:
    script = big_reads(repo, 5)
    with (
        FakeLlama(script, n_ctx=4096, default=fl.prose("done")) as flint,
        FakeLlama([], n_ctx=1024, default=fl.prose("Jeff's summary")) as jeff,
    ):
        run = run_agent(repo, flint.url, "--preset", "summary-jeff", "--max-steps", "6", "--jeff", jeff.url)
    [first, *_] = run.of("summary")
    assert first["by"] == "jeff" and first["applied"] and "request" not in first
    question = jeff.requests[0]["messages"][1]["content"]
    assert "RECORD_1 = 1" in question and len(question) < 1024 * 3  # the material itself, cut to his window
    assert flint.requests[-1]["messages"][SUMMARY_AT]["content"].endswith("Jeff's summary")
    assert all("max_tokens" not in r for r in flint.requests)  # Flint was never asked for one


def test_summary_jeff_without_jeff_is_a_usage_error(agent_process: AgentProcess, repo: Path) -> None:
    done = agent_process(["--repo", str(repo), "--task", "t", "--preset", "summary-jeff", "--no-jeff"])
    assert done.returncode == 2 and "has Jeff write summaries: pass --jeff URL" in done.stderr


def test_hybrid_clears_first_and_summarizes_only_when_that_is_not_enough(run_agent: RunAgent, repo: Path) -> None:
    script = big_reads(repo, 5)
    with SummarizingLlama(script, n_ctx=4096, summary=fl.prose(SUMMARY), default=fl.prose("done")) as flint:
        run = run_agent(repo, flint.url, "--preset", "hybrid", "--max-steps", "6")
    assert run.of("clear") and run.of("summary") == []  # clearing brought it under the threshold
    script = big_reads(repo, 6)
    with SummarizingLlama(script, n_ctx=2000, summary=fl.prose(SUMMARY), default=fl.prose("done")) as flint:
        run = run_agent(repo, flint.url, "--preset", "hybrid", "--max-steps", "7")
    # Each step from the fourth: clear, still past the threshold, summarize; the first summary (of one thinned
    # turn) would not make the conversation smaller and is left out.
    summaries = [(s["step"], s["applied"]) for s in run.of("summary")]
    assert summaries == [(4, False), (5, True), (6, True), (7, True)]
    assert [c["step"] for c in run.of("clear") if c["changed"]] == [4, 5, 6, 7]
    assert (
        paired(flint.requests[-1]["messages"]) and len(flint.requests[-1]["messages"]) == 7
    )  # system, task, summary, two turns
