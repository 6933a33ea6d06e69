"""The summary presets' runs measured as the bench measures them, against the scripted server: Flint's summaries
count in its tokens as its /metrics counter does, the reprocessing split gives the summary its own cause and still
adds up, and the summary columns' figures come from the trace."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main as agent_main
from bench.llama.tokenizer import ServerTokenizer
from bench.measure.reprocessing import attribute
from bench.measure.request_log import load_request_log
from bench.measure.summaries import summary_figures
from bench.measure.trace_numbers import trace_numbers
from bench.testing import fake_llama
from bench.testing.fake_llama import FakeLlama

# The agent runs in this process to its done check, whose pytest is a child process: not the fast tier.
pytestmark = pytest.mark.usefixtures("child_processes")

FILLER = "".join(f"RECORD_{j} = {j}  # filler to take up room\n" for j in range(40))


class SummarizingLlama(FakeLlama):
    """The scripted server; a request with max_tokens (the summary's question) is answered outside the script."""

    def next_reply(self, body: dict[str, Any]) -> tuple[fake_llama.Reply, int]:
        if "max_tokens" in body:
            with self.lock:
                self.requests.append(body)
            return fake_llama.prose("The big files hold records."), fake_llama.count_tokens(self.render(body))
        return super().next_reply(body)


class RefusingSummaries(FakeLlama):
    """The scripted server; the summary's question is refused as too big for the window, as a real server refuses a
    conversation that fits with room for nothing more (the summary at a 1,536-token window, issue 53's bench)."""

    def next_reply(self, body: dict[str, Any]) -> tuple[fake_llama.Reply, int]:
        if "max_tokens" in body:
            with self.lock:
                self.requests.append(body)
            return fake_llama.context_error(), fake_llama.count_tokens(self.render(body))
        return super().next_reply(body)


def run(tmp_path: Path, flint: FakeLlama, *args: str) -> list[dict[str, Any]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(6):
        (repo / f"big{i}.py").write_text(FILLER)
    (repo / "test_calc.py").write_text("def test_add():\n    assert 2 + 1 == 3\n")
    events = tmp_path / "events.jsonl"
    argv = ["--repo", str(repo), "--task", "Add sub.", "--flint", flint.url, "--events", str(events)]
    with contextlib.redirect_stdout(io.StringIO()):
        agent_main([*argv, "--approve", "no", "--max-steps", "7", *args])
    return [json.loads(line) for line in events.read_text().splitlines()]


READS = [fake_llama.tool_call("read_file", {"path": f"big{i}.py"}) for i in range(6)]


@pytest.mark.parametrize("preset", ["summary", "hybrid"])
def test_flints_summaries_count_as_its_metrics_do_and_have_their_own_cause(tmp_path: Path, preset: str) -> None:
    with SummarizingLlama(READS, n_ctx=2000 if preset == "hybrid" else 4096) as flint:
        trace = run(tmp_path, flint, "--preset", preset, "--no-jeff")
        tokenizer = ServerTokenizer(flint.url)
        split = attribute(trace, load_request_log(tmp_path), tokenizer)
        tokenizer.close()
    numbers = trace_numbers(trace)
    assert numbers.prompt_tokens_reprocessed == flint.counters["prompt_tokens_total"]  # the /metrics cross-check
    assert numbers.steps == 7 and len(flint.requests) > 7  # the summaries are requests, not steps
    totals = split.totals()
    assert split.status == "ok" and totals is not None
    assert sum(totals.values()) == numbers.prompt_tokens_reprocessed and totals["summary"] > 0
    figures = summary_figures(trace)
    assert figures.made >= 1 and figures.tokens and figures.model_s is not None


def test_jeffs_summaries_are_his_and_flints_tokens_still_match(tmp_path: Path) -> None:
    with (
        FakeLlama(READS, n_ctx=4096) as flint,
        FakeLlama([], n_ctx=2048, default=fake_llama.prose("Records.")) as jeff,
    ):
        trace = run(tmp_path, flint, "--preset", "summary-jeff", "--jeff", jeff.url)
        tokenizer = ServerTokenizer(flint.url)
        split = attribute(trace, load_request_log(tmp_path), tokenizer)
        tokenizer.close()
    numbers = trace_numbers(trace)
    assert numbers.prompt_tokens_reprocessed == flint.counters["prompt_tokens_total"]
    assert numbers.jeff_prompt_tokens == sum(r["usage"]["prompt_tokens"] for r in jeff.responses) > 0  # his
    totals = split.totals()
    assert totals is not None and totals["summary"] > 0 and totals["clearing"] == 0


def test_a_summary_refused_for_size_leaves_the_split_whole(tmp_path: Path) -> None:
    """The server read nothing of it (no timings, its slot unchanged), so no answered request is missing."""
    with RefusingSummaries(READS, n_ctx=4096) as flint:
        trace = run(tmp_path, flint, "--preset", "summary", "--no-jeff")
        tokenizer = ServerTokenizer(flint.url)
        split = attribute(trace, load_request_log(tmp_path), tokenizer)
        tokenizer.close()
    refused = [e for e in trace if e["event"] == "summary" and e["timings"] is None]
    assert refused and all(e["error"].startswith("exceed_context_size_error") for e in refused)
    totals = split.totals()
    assert split.status == "ok" and totals is not None, split.note
    assert (
        sum(totals.values()) == trace_numbers(trace).prompt_tokens_reprocessed == flint.counters["prompt_tokens_total"]
    )
