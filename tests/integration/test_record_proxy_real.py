"""The recording proxy in front of the real llama-server: a streamed and a non-streamed chat completion pass, their
answers come back whole, and the log's usage and timings (the stream's from its final chunks) add up to what the
server's own /metrics counted; the log read as a trace gives the row's figures with reprocessed_check ok. An agent
that leaves while its answer is computed still has its request in the log."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench import ROOT
from bench.llama.api import prompt_counter, wait_idle
from bench.llama.binaries import find_small_model
from bench.llama.process import LlamaProcess
from bench.measure.proxy_log import proxy_events, read_exchanges
from bench.measure.trace_numbers import check_reprocessed, trace_numbers
from bench.sandbox.record_proxy import RecordingProxy

pytestmark = [pytest.mark.llama, pytest.mark.usefixtures("child_processes")]

ASK = {"messages": [{"role": "user", "content": "Count from one to five."}], "max_tokens": 24, "temperature": 0}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LlamaProcess]:
    with LlamaProcess(find_small_model(), 1024, tmp_path / "llama-server.log", threads=1) as process:
        yield process


def test_streamed_and_plain_answers_are_relayed_and_recorded_as_the_server_counted(
    server: LlamaProcess, tmp_path: Path
) -> None:
    log = tmp_path / "proxy.jsonl"
    before = prompt_counter(server.url)
    with RecordingProxy(server.url, log, checkout=ROOT) as url:
        plain = httpx.post(f"{url}/v1/chat/completions", json=ASK, timeout=120).json()
        with httpx.stream("POST", f"{url}/v1/chat/completions", json={**ASK, "stream": True}, timeout=120) as r:
            lines = [line for line in r.iter_lines() if line.startswith("data: ")]
        assert httpx.get(f"{url}/metrics").status_code == 403
    after = prompt_counter(server.url)
    assert plain["choices"][0]["message"]["content"] and lines[-1] == "data: [DONE]"
    exchanges = read_exchanges(log.read_text())
    assert [e["streamed"] for e in exchanges] == [False, True]
    assert exchanges[0]["timings"] == plain["timings"]
    final = [json.loads(line[6:]) for line in lines[:-1] if "timings" in line][-1]
    assert exchanges[1]["timings"] == final["timings"] and exchanges[1]["finish_reason"] in ("stop", "length")
    numbers = trace_numbers(proxy_events(exchanges, 1024, "done"))
    assert numbers.steps == 2 and numbers.prompt_tokens_reprocessed
    assert check_reprocessed(numbers, before, after).status == "ok"


def test_an_agent_killed_while_its_answer_is_computed_leaves_a_row_that_says_why_it_is_unchecked(
    server: LlamaProcess, tmp_path: Path
) -> None:
    """The agent's connection closes once Flint's prefill has ended (/metrics counts a prompt then) and before its
    answer: the proxy writes the request down as in flight, and the check names the prompt the server never
    reported instead of calling the trace empty."""
    log = tmp_path / "proxy.jsonl"
    before = prompt_counter(server.url)
    body = json.dumps({**ASK, "max_tokens": 400, "ignore_eos": True}).encode()
    with RecordingProxy(server.url, log, checkout=ROOT) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as agent:
            head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
            agent.sendall(head.encode() + body)
            deadline = time.monotonic() + 120
            while prompt_counter(server.url) == before and time.monotonic() < deadline:
                time.sleep(0.05)  # until its prefill ended: the server counted the prompt, and is now decoding
        assert wait_idle([server.url]) is None  # the proxy closed its side too: the server dropped the task
    after = prompt_counter(server.url)
    (entry,) = read_exchanges(log.read_text())
    assert entry["in_flight"] is True and entry["status"] is None and entry["streamed"] is False
    numbers = trace_numbers(proxy_events([entry], 1024, "interrupted"))
    assert (numbers.steps, numbers.unanswered, numbers.prompt_tokens_reprocessed) == (0, 1, 0)
    check = check_reprocessed(numbers, before, after)
    assert before is not None and after is not None and after > before
    assert check.status == "unchecked" and check.metrics_delta == after - before
    assert check.note and f"counted {after - before:.0f} tokens more than the answers' sum 0" in check.note
