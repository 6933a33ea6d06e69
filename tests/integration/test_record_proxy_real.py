"""The recording proxy in front of the real llama-server: a streamed and a non-streamed chat completion pass, their
answers come back whole, and the log's usage and timings (the stream's from its final chunks) add up to what the
server's own /metrics counted; the log read as a trace gives the row's figures with reprocessed_check ok."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench import ROOT
from bench.llama.api import prompt_counter
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
