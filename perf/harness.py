"""What the harness itself costs, apart from the model (figures for perf/run.py):

- clearing a long conversation (300 tool results of 4,000 characters): it runs after every answer past the threshold;
- the agent's own time per step beyond the server: a 30-step run against the scripted server (a process of its
  own, no model delay), the agent's CPU time (HTTP, JSON, the trace and the request log, one small read_file) less
  the CPU time of sending the same requests bare;
- computing a results row's trace figures and failure labels from a 10,000-event trace.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.clearing import clear_old
from agent.cli import main as agent_main
from bench.measure.labels import Outcome, failure_labels
from bench.measure.trace_numbers import trace_numbers
from bench.testing import fake_llama
from perf.figures import Figure, figure, timed

ROOT = Path(__file__).resolve().parents[1]
READ = fake_llama.tool_call("read_file", {"path": "mod.py"})


def conversation(results: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s" * 2000}, {"role": "user", "content": "task"}]
    for i in range(results):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {
                "name": "write_file",
                "arguments": json.dumps({"path": f"f{i}.py", "content": "x = 1\n" * 600}),
            },
        }
        messages.append({"role": "assistant", "content": "", "reasoning_content": "r" * 1000, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "y" * 4000})
    return messages


def clearing_ms(repeats: int) -> list[float]:
    base = conversation(300)
    copies = [copy.deepcopy(base) for _ in range(repeats)]
    return timed(lambda: clear_old(copies.pop(), keep=2), repeats, scale=1000)


def agent_step_ms(steps: int) -> float:
    """The agent's CPU time per step, less what sending the same bodies bare costs.

    CPU time, not wall time: the scripted server runs as a process of its own, so what is counted is the agent's own
    work (JSON, the trace and the request log, the tool, the HTTP client), and a busy machine's waits are not. A
    one-step run is taken off a run of steps + 1, so the agent's start (reading /props, the snapshot) is not."""
    one, _ = agent_cpu(1)
    full, bodies = agent_cpu(steps + 1)
    with tempfile.TemporaryDirectory() as tmp:
        script, record = Path(tmp) / "script.json", Path(tmp) / "requests.jsonl"
        script.write_text(json.dumps({"replies": [], "default": READ, "n_ctx": 1_000_000}))
        with scripted_server(script, record) as url:
            start = time.process_time()
            for body in bodies[1:]:
                bare_request(url, body)
            bare_s = time.process_time() - start
    return (full - one - bare_s) * 1000 / steps


def agent_cpu(steps: int) -> tuple[float, list[dict[str, Any]]]:
    """The agent's CPU seconds for a run of `steps` reads, and the bodies it sent."""
    with tempfile.TemporaryDirectory() as tmp:
        repo, script, record = Path(tmp) / "repo", Path(tmp) / "script.json", Path(tmp) / "requests.jsonl"
        repo.mkdir()
        (repo / "mod.py").write_text("def f():\n    return 1\n" * 50)
        (repo / "test_mod.py").write_text("from mod import f\n\n\ndef test_f():\n    assert f() == 1\n")
        script.write_text(json.dumps({"replies": [READ] * steps, "default": READ, "n_ctx": 1_000_000}))
        with scripted_server(script, record) as url:
            argv = [
                "--repo",
                str(repo),
                "--task",
                "read",
                "--flint",
                url,
                "--no-jeff",
                "--approve",
                "no",
                "--max-steps",
                str(steps),
                "--preset",
                "part3",
                "--events",
                str(Path(tmp) / "events.jsonl"),
            ]
            start = time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):  # the agent's per-step lines are not the point here
                agent_main(argv)
            spent = time.process_time() - start
        return spent, [json.loads(line) for line in record.read_text().splitlines()]


@contextlib.contextmanager
def scripted_server(script: Path, record: Path) -> Iterator[str]:
    """The scripted llama-server as a process of its own; yields its URL."""
    args = [sys.executable, "-m", "bench.testing.fake_llama", "--script", str(script), "--record", str(record)]
    server = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = server.stdout.readline() if server.stdout else ""
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout:
            server.stdout.close()


def bare_request(url: str, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(f"{url}/v1/chat/completions", data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def row_ms(repeats: int, events_n: int = 10_000) -> list[float]:
    usage = {"prompt_tokens": 3000, "completion_tokens": 200, "total_tokens": 3200}
    timings = {"prompt_n": 300, "cache_n": 2700, "prompt_ms": 100.0, "predicted_ms": 900.0}
    events: list[dict[str, Any]] = [{"t": 0, "event": "start", "n_ctx": 4096}]
    for step in range(events_n // 2):
        events.append({"t": step, "event": "response", "step": step, "usage": usage, "timings": timings})
        events.append({"t": step, "event": "tool", "step": step, "name": "read_file", "args": {"path": f"f{step % 7}"}})
    events.append({"t": events_n, "event": "stop", "reason": "step_limit", "steps": events_n // 2})
    outcome = Outcome(stop_reason="step_limit", files_changed=0, hidden_passed=2, hidden_total=6)

    def row() -> None:
        trace_numbers(events)
        failure_labels(events, outcome)

    return timed(row, repeats, scale=1000)


def figures(quick: bool) -> list[Figure]:
    repeats, steps = (1, 5) if quick else (5, 30)
    return [
        figure("clear_old, 300 tool results", "ms", clearing_ms(repeats), "<= 50", quick),
        figure(
            "agent's own time per step, beyond the server",
            "ms",
            [agent_step_ms(steps) for _ in range(repeats)],
            "<= 1.0",
            quick,
        ),
        figure("row figures from 10,000 events", "ms", row_ms(repeats), "<= 500", quick),
    ]
