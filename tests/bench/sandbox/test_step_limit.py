"""The run's step limit as the recording proxy keeps it (docker/record_proxy.py's StepLimit) and the sandbox ends the
agent on it (bench/sandbox/proxy_stop.py): the main thread's requests past the limit never reach the server, the
stop line comes only once no request is left with it, and the run's row ends `step_limit` with /metrics matching
every answered request."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench import ROOT
from bench.agents.kinds import KINDS
from bench.config import BenchConfig
from bench.processes import run_to_end
from bench.run.runner import Bench
from bench.sandbox.local import LocalSandboxes
from bench.sandbox.proxy_stop import ProxyStopped
from bench.sandbox.record_proxy import RecordingProxy
from bench.testing.fake_llama import FakeLlama, prose
from bench.testing.fakes import FakeFactory, FakeServers
from bench.testing.tiny_agent import endless

sys.path.insert(0, str(ROOT / "docker"))  # the proxy's folder, as when it runs: it imports forward.py from there
from chat_body import Refused  # noqa: E402
from record_proxy import StepLimit  # noqa: E402

CHAT = "POST /v1/chat/completions"
BASH = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
MAIN = {"messages": [{"role": "user", "content": "fix it"}], "tools": BASH}
SIDE = {"messages": [{"role": "user", "content": "sum up"}]}


def test_the_limit_counts_the_requests_with_tools_and_then_refuses_every_model_request() -> None:
    limit = StepLimit(3)
    limit.admit(CHAT, SIDE)  # a side request (no tools: a title, a summary): not a step
    limit.admit(CHAT, MAIN)
    limit.admit("POST /v1/messages/count_tokens", MAIN)  # not a model request
    limit.admit(CHAT, {**MAIN, "tools": [{"type": "function", "function": {"name": "task"}}]})  # a sub-agent's step
    limit.admit(CHAT, SIDE)
    limit.admit(CHAT, MAIN)
    assert limit.taken == 3 and limit.reached is None
    with pytest.raises(Refused, match="step limit: 3 requests"):
        limit.admit(CHAT, {**MAIN, "tools": [{"type": "function", "function": {"name": "task"}}]})
    with pytest.raises(Refused):
        limit.admit("POST /v1/responses", SIDE)  # after the limit nothing reaches the server
    assert limit.reached == CHAT


def test_the_stop_line_waits_for_the_requests_still_with_the_server_and_comes_once() -> None:
    limit = StepLimit(1)
    limit.admit(CHAT, MAIN)
    limit.with_server.add(7)  # a request passed on and not yet answered
    with pytest.raises(Refused):
        limit.admit(CHAT, MAIN)
    assert limit.stop_line() is None
    limit.with_server.discard(7)
    assert limit.stop_line() == {"stopped": "step_limit", "max_steps": 1, "refused": CHAT}
    assert limit.stop_line() is None


def test_without_a_limit_or_without_tools_nothing_is_refused() -> None:
    unlimited, toolless = StepLimit(None), StepLimit(1)
    for _ in range(5):
        unlimited.admit(CHAT, MAIN)
        toolless.admit(CHAT, SIDE)  # aider's requests offer no tools: no main thread to count
    assert unlimited.reached is None and toolless.reached is None and toolless.taken == 0


def test_the_stop_is_read_from_the_logs_own_line_only_as_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    stopped = ProxyStopped(log)
    assert not stopped()  # no log yet
    body = {"route": CHAT, "request": {"messages": [{"content": '{"stopped": "step_limit"}'}]}}
    log.write_text(json.dumps(body) + "\n" + '{"stopped": "step_li')
    assert not stopped()  # a body quoting the line is not it, and half a line is not read as one
    with log.open("a") as file:
        file.write('mit", "max_steps": 3}\n')
    assert stopped() and stopped()


def _ask(url: str, body: dict[str, Any], answers: list[int]) -> None:
    answers.append(httpx.post(url + "/v1/chat/completions", json=body, timeout=30).status_code)


@pytest.mark.usefixtures("child_processes")
def test_the_proxy_passes_the_limit_and_writes_its_stop_after_the_side_request_still_answered(tmp_path: Path) -> None:
    """Two main steps pass; the third is refused while a slow side request is still with the server: the stop line
    comes after that request's answer, which is logged with its timings, and nothing refused reached the server."""
    log = tmp_path / "proxy.jsonl"
    slow = {**prose("a summary"), "delay": 1.0}
    with (
        FakeLlama([prose("one"), prose("two"), slow]) as flint,
        RecordingProxy(flint.url, log, checkout=ROOT, max_steps=2) as url,
    ):
        stopped, answers = ProxyStopped(log), []
        for _ in range(2):
            _ask(url, MAIN, answers)
        side = threading.Thread(target=_ask, args=(url, SIDE, answers))
        side.start()
        while len(flint.requests) < 3:  # the side request is with the server
            threading.Event().wait(0.02)
        _ask(url, MAIN, answers)
        assert answers == [200, 200, 400] and not stopped()
        side.join(30)
        for _ in range(100):
            if stopped():
                break
            threading.Event().wait(0.05)
        _ask(url, SIDE, answers)
    assert answers == [200, 200, 400, 200, 400] and stopped()
    assert len(flint.requests) == 3
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line.get("route") for line in lines] == [CHAT, CHAT, CHAT, None]
    assert lines[2]["request"] == SIDE and lines[2]["timings"]["prompt_n"] > 0
    assert lines[3]["stopped"] == "step_limit" and lines[3]["max_steps"] == 2


@pytest.mark.usefixtures("child_processes")
def test_a_process_is_killed_with_its_children_once_until_says_so(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    child = tmp_path / "child.pid"
    script = f"sleep 300 & echo $! > {child}; touch {flag}; wait"
    code, timed_out, _ = run_to_end(["sh", "-c", script], cwd=tmp_path, env={}, timeout_s=120, until=flag.exists)
    assert (code, timed_out) == (-9, False)
    stat = Path(f"/proc/{int(child.read_text())}/stat")
    deadline = time.monotonic() + 10  # SIGKILL is delivered at once, but the child's exit takes the kernel a moment
    while not ended(stat) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ended(stat)


def ended(stat: Path) -> bool:
    """The process of /proc/<pid>/`stat` is gone, or a zombie its parent has not reaped yet."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.usefixtures("child_processes")
def test_an_agent_that_never_ends_stops_at_the_step_limit_with_every_request_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(KINDS, "endless", endless())
    config = BenchConfig(
        agents=["endless"], use_jeff=False, sandbox="local", max_steps=3, run_timeout_s=120, out=str(tmp_path / "r.csv")
    )
    sandboxes = LocalSandboxes(config, checkout=ROOT)
    (row,) = Bench(config, FakeFactory(config, FakeServers(), sandboxes, checkout=ROOT), checkout=ROOT).run()
    assert row["stop_reason"] == "step_limit", row["error"]
    assert (row["requests_main"], row["requests_side"], row["steps"]) == ("3", "3", "6")
    assert row["reprocessed_check"] == "ok", row["error"]
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] != ""
