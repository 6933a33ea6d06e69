"""The request log (agent/requests.py): every body sent to Flint, rebuilt from the side file, is exactly the body the
server received; each answer's trace event says which request it answered and which message the harness changed."""

from __future__ import annotations

import json
from pathlib import Path

from agent_helpers import RunAgent

from agent.requests import RequestLog, beside
from bench.measure.request_log import parse_request_log
from bench.testing import fake_llama

BIG = "x = 1\n" * 400  # a tool result large enough that a 4,096-token window needs clearing after a few


def test_the_log_rebuilds_every_body_the_server_received(run_agent: RunAgent, repo: Path) -> None:
    (repo / "big.py").write_text(BIG)
    replies = [fake_llama.tool_call("read_file", {"path": "big.py"}) for _ in range(6)]
    with fake_llama.FakeLlama(replies, n_ctx=4096) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3", "--max-steps", "6")
    log = beside(repo.parent / "events.jsonl")
    assert log is not None and log.name == "events.requests.jsonl"
    bodies = parse_request_log(log.read_text())
    assert bodies.complete and bodies.bodies == flint.requests  # what was logged is what was sent, byte for byte
    responses = run.of("response")
    assert [r["request"] for r in responses] == list(range(len(flint.requests)))[: len(responses)]
    # Only a request after a clearing says it changed an earlier message; the others only appended.
    cleared_since, changed_requests = False, 0
    for event in run.events:
        cleared_since = cleared_since or (event["event"] == "clear" and event["changed"] > 0)
        if event["event"] != "response":
            continue
        response, changed = event, event["changed_from"]
        assert (changed is not None) == cleared_since, response
        cleared_since = False
        if changed is not None:
            changed_requests += 1
            before, now = flint.requests[response["request"] - 1], flint.requests[response["request"]]
            assert before["messages"][:changed] == now["messages"][:changed]
            assert before["messages"][changed] != now["messages"][changed]
    assert changed_requests >= 1
    # The log holds differences: each record only the messages from the first one that changed.
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [len(r["messages"]) for r in records] == [
        len(b["messages"]) - r["from"] for r, b in zip(records, bodies.bodies, strict=True)
    ]
    assert sum(r["from"] for r in records) > 0 and "body" not in records[1]


def test_a_refused_request_and_its_cleared_retry_are_two_requests(run_agent: RunAgent, repo: Path) -> None:
    (repo / "big.py").write_text(BIG)
    read = fake_llama.tool_call("read_file", {"path": "big.py"})
    replies = [read, fake_llama.context_error(), read]
    with fake_llama.FakeLlama(replies, n_ctx=4096) as flint:
        run = run_agent(repo, flint.url, "--preset", "part3", "--max-steps", "2", "--keep", "0")
    (refused,) = run.of("http_error")
    assert refused["request"] == 1 and refused["changed_from"] is None
    retry = run.of("response")[-1]
    assert retry["request"] == 2 and retry["step"] == refused["step"] and retry["changed_from"] is not None


def test_past_its_cap_the_log_says_so_and_stops(tmp_path: Path) -> None:
    path = tmp_path / "events.requests.jsonl"
    log = RequestLog(path, max_bytes=300)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    assert log.sent(1, {"messages": messages, "tools": []}) == {"request": 0, "changed_from": None}
    messages.append({"role": "assistant", "content": "y" * 400})
    assert log.sent(2, {"messages": messages, "tools": []}) == {"request": 1, "changed_from": None}
    log.close()
    bodies = parse_request_log(path.read_text())
    assert not bodies.complete and len(bodies.bodies) == 1
    assert beside(Path("/dev/null")) is None  # a trace that is no file gets no side file
