"""Faults classified where they happen: what the server watch saw and the trace's request latencies, judged.

The first tests judge made-up probe histories and traces (no server); the last ones run the bench against the
scripted server (bench/testing/fake_llama.py) as external servers with local sandboxes: a hung Flint, a Flint that
restarts on the same port, a Flint stopped with SIGSTOP, and a Jeff that dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from small_task import CODE, SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ServerStartError
from bench.measure.stall import SLACK_S, server_stall
from bench.run import server_watch
from bench.run.runner import Bench
from bench.run.server_faults import judge
from bench.run.server_watch import NO_ANSWER, OK, REFUSED, History, Probe, Watched
from bench.testing import fake_llama

FLINT = Watched("Flint", "http://127.0.0.1:9")
JEFF = Watched("Jeff", "http://127.0.0.1:10")
COUNTER = "llamacpp:prompt_tokens_total"


def history(server: Watched, *probes: tuple[str, float | None] | tuple[str, float | None, str]) -> History:
    """Probes one second apart: (health, prompt_tokens_total or None[, process state])."""
    return History(
        server,
        [
            Probe(float(t), p[0], None if p[1] is None else {COUNTER: p[1]}, p[2] if len(p) > 2 else None)
            for t, p in enumerate(probes)
        ],
    )


def answered(t: float, step: int, server_ms: float = 100.0) -> dict[str, Any]:
    return {"t": t, "event": "response", "step": step, "timings": {"prompt_ms": server_ms, "predicted_ms": 0.0}}


def test_a_server_down_before_the_run_is_named() -> None:
    verdict = judge([history(FLINT, (OK, 0)), history(JEFF, (REFUSED, None), (REFUSED, None))], [], 10)
    assert verdict.faults == ["Jeff (http://127.0.0.1:10) was not answering before the run started (refused)"]


def test_a_server_that_stops_accepting_connections_died() -> None:
    (fault,) = judge([history(FLINT, (OK, 0), (OK, 50), (REFUSED, None), (REFUSED, None))], [], 10).faults
    assert fault == "Flint (http://127.0.0.1:9) died during the run (refusing connections since t=2.0 s)"


def test_counters_that_go_back_mean_a_restart_on_the_same_port() -> None:
    (fault,) = judge([history(FLINT, (OK, 0), (OK, 812), (OK, 0), (OK, 40))], [], 10).faults
    assert fault.startswith("Flint (http://127.0.0.1:9) restarted during the run")
    assert "prompt_tokens_total went back from 812 to 0 (t=2.0 s)" in fault


def test_refused_then_answering_again_is_a_restart_even_with_counters_unread() -> None:
    (fault,) = judge([history(FLINT, (OK, None), (REFUSED, None), (OK, None))], [], 10).faults
    assert "refused connections at t=1.0 s and answered again at t=2.0 s" in fault


def test_a_server_silent_at_the_end_hung_and_a_stopped_process_says_so() -> None:
    probes = history(FLINT, (OK, 0), (NO_ANSWER, None, "T"), (NO_ANSWER, None, "T"))
    (fault,) = judge([probes], [], 10).faults
    assert fault.endswith("hung: it has not answered /health since t=1.0 s (its process was stopped: state T)")


def test_a_request_without_an_answer_is_the_servers_fault_not_the_agents() -> None:
    events = [
        {"t": 0.0, "event": "start"},
        answered(1.0, 1),
        {"t": 61.0, "event": "http_error", "step": 2, "status": None, "type": "timeout", "message": "timed out"},
        {"t": 61.1, "event": "stop", "reason": "server_error"},
    ]
    verdict = judge([history(FLINT, (OK, 0), (OK, 5), (OK, 5))], events, 10)
    assert verdict.faults == [
        "Flint (http://127.0.0.1:9) hung: 1 request(s) at step 2 got no answer in time; /health answered throughout"
    ]
    assert verdict.stall_s == 60.0  # the unanswered request's whole time


def test_an_answer_the_server_gave_stays_the_agents_server_error() -> None:
    events = [
        {"t": 0.0, "event": "start"},
        {"t": 1.0, "event": "http_error", "step": 1, "status": 400, "type": "invalid_request_error", "message": "x"},
        {"t": 1.1, "event": "stop", "reason": "server_error"},
    ]
    verdict = judge([history(FLINT, (OK, 0), (OK, 0))], events, 10)
    assert verdict.faults == [] and verdict.stall_s == 0.0


def test_request_latency_beyond_the_servers_timings_is_a_stall_flagged_or_failed_by_the_limit() -> None:
    events = [{"t": 0.0, "event": "start"}, answered(1.0, 1), answered(62.0, 2, server_ms=2000.0)]
    stall = server_stall(events)
    assert (stall.flint_s, stall.jeff_s, stall.seconds) == (59.0, 0.0, 59.0)
    assert stall.worst == "Flint step 2: 59.0 s beyond the server's timings"
    below = judge([history(FLINT, (OK, 0), (OK, 0))], events, 100)
    assert below.faults == [] and below.notes[0].startswith("servers stalled: Flint (http://127.0.0.1:9) 59.0 s")
    above = judge([history(FLINT, (OK, 0), (NO_ANSWER, None), (OK, 9))], events, 10)
    assert above.notes == [] and "above server_stall_limit_s=10" in above.faults[0]
    assert "Flint did not answer /health from t=1.0 to 1.0 s" in above.faults[0]


def test_ordinary_overhead_and_jeffs_own_seconds() -> None:
    within = [{"t": 0.0, "event": "start"}, answered(0.1 + SLACK_S, 1)]  # HTTP and template time: not a stall
    assert server_stall(within).seconds == 0.0
    jeff = [
        {"t": 0.0, "event": "start"},
        {"t": 5.0, "event": "jeff", "step": 1, "seconds": 4.5, "timings": {"prompt_ms": 500.0, "predicted_ms": 0.0}},
        {"t": 15.0, "event": "jeff", "step": 2, "seconds": 10.0, "timings": None, "error": "timeout: no answer"},
    ]
    stall = server_stall(jeff)
    assert (stall.flint_s, stall.jeff_s, stall.unanswered) == (0.0, 14.0, 1)


# The scripted server, for real: the watch polls quickly so that short tests see what it sees.


@pytest.fixture(autouse=True)
def quick_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_watch, "INTERVAL_S", 0.2)
    monkeypatch.setattr(server_watch, "HEALTH_TIMEOUT_S", 0.5)


def config(tmp_path: Path, flint_url: str, **changes: object) -> BenchConfig:
    """Runs of the suite's small task (tests/small_task.py): these tests read the servers' faults, not the grading."""
    settings: dict[str, object] = {
        "servers": "external",
        "sandbox": "local",
        "flint_url": flint_url,
        "use_jeff": False,
        **SETTINGS,
        "presets": ["part2"],
        "ctx": [4096],
        "max_steps": 4,
        "out": str(tmp_path / "results.csv"),
        "agent_retries": 0,
        "agent_retry_delay_s": 0.05,
        "server_wait_s": 0.0,  # each fault as the run saw it: no waiting for the server to come back, no re-run
    }
    return BenchConfig(**(settings | changes))  # type: ignore[arg-type]


READ = fake_llama.tool_call("read_file", {"path": CODE})


@pytest.mark.usefixtures("child_processes")
def test_a_hung_flint_makes_the_run_infra_error_naming_it(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([READ, fake_llama.hang()]) as flint:
        (row,) = Bench(config(tmp_path, flint.url, request_timeout_s=1.0), checkout=ROOT).run()
    assert row["stop_reason"] == "infra_error"
    assert f"Flint ({flint.url}) hung: 1 request(s) at step 2 got no answer in time" in row["error"]
    assert "infrastructure" in row["failure_labels"]
    assert 0.9 <= float(row["server_stall_s"]) <= 3.0


@pytest.mark.usefixtures("child_processes")
def test_the_run_a_hung_flint_cut_short_runs_again_once_it_answers(tmp_path: Path) -> None:
    replies = [READ, fake_llama.hang(), READ, fake_llama.prose("Done.")]
    with fake_llama.FakeLlama(replies) as flint:
        settings = config(tmp_path, flint.url, request_timeout_s=1.0, server_wait_s=10.0)
        (row,) = Bench(settings, checkout=ROOT).run()
    assert row["stop_reason"] != "infra_error" and row["claimed_done"] == "true", row["error"]
    assert row["error"].startswith("re-run: ") and f"Flint ({flint.url}) hung: 1 request(s) at step 2" in row["error"]
    runs = tmp_path / "runs"
    assert len(list(runs.glob("*.interrupted"))) == 1  # the attempt the hang cut short, kept aside


@pytest.mark.usefixtures("child_processes")
def test_a_flint_that_restarts_on_the_same_port_is_caught(tmp_path: Path) -> None:
    first = fake_llama.FakeLlama([READ, fake_llama.die()]).start()
    port = first.server.server_address[1]
    second: list[fake_llama.FakeLlama] = []

    def come_back() -> None:  # a supervisor restarting the dead server where it was
        while first.thread is not None or not first.stopped.is_set():
            time.sleep(0.01)
        time.sleep(0.05)
        second.append(fake_llama.FakeLlama([{**fake_llama.prose("Done."), "delay": 1.0}], port=port).start())

    supervisor = threading.Thread(target=come_back)
    supervisor.start()
    try:
        (row,) = Bench(config(tmp_path, first.url, agent_retries=3, agent_retry_delay_s=0.5), checkout=ROOT).run()
    finally:
        supervisor.join()
        for fake in second:
            fake.stop()
    assert row["stop_reason"] == "infra_error" and row["claimed_done"] == "true"  # the agent did finish
    assert f"Flint ({first.url}) restarted during the run" in row["error"]
    assert row["reprocessed_check"] == "counter_reset"


@pytest.fixture
def flint_process(tmp_path: Path, child_processes: None) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """The scripted server as a process of its own, so that it can be stopped with SIGSTOP."""
    script, record = tmp_path / "script.json", tmp_path / "requests.jsonl"
    script.write_text(json.dumps({"replies": [READ, {**fake_llama.prose("Done."), "delay": 0.3}]}))
    command = [sys.executable, "-m", "bench.testing.fake_llama", "--script", str(script), "--record", str(record)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().split()[-1]
    yield process, url, record
    os.kill(process.pid, signal.SIGCONT)
    process.terminate()
    process.wait(timeout=10)
    process.stdout.close()


def test_a_flint_stopped_with_sigstop_is_a_stall_not_harness_time(
    tmp_path: Path, flint_process: tuple[subprocess.Popen[str], str, Path]
) -> None:
    process, url, record = flint_process

    def stop_during_the_second_request() -> None:
        while not record.exists() or len(record.read_text().splitlines()) < 2:
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGSTOP)
        time.sleep(3.0)
        os.kill(process.pid, signal.SIGCONT)

    stopper = threading.Thread(target=stop_during_the_second_request)
    stopper.start()
    (row,) = Bench(config(tmp_path, url, server_stall_limit_s=2.0), checkout=ROOT).run()
    stopper.join()
    assert row["stop_reason"] == "infra_error" and row["claimed_done"] == "true"
    assert f"servers stalled: Flint ({url})" in row["error"] and "above server_stall_limit_s=2" in row["error"]
    assert "Flint did not answer /health from" in row["error"]
    stall, wall, harness = (float(row[c]) for c in ("server_stall_s", "wall_s", "harness_s"))
    assert 2.9 <= stall <= 5.0
    assert harness < wall - stall + 0.1  # the stopped seconds are the server's, not the harness's
    parts = [float(row[c]) for c in ("flint_model_s", "tools_s", "server_stall_s", "own_s")]  # no Jeff
    assert abs(sum(parts) - wall) <= 0.02  # wall_s = flint_model_s + tools_s + server_stall_s + own_s
    assert float(row["own_s"]) < 1.5  # the harness's own time holds none of the stopped seconds


@pytest.mark.usefixtures("child_processes")
def test_a_jeff_that_dies_is_named_and_his_figures_are_empty(tmp_path: Path) -> None:
    flint_replies = [fake_llama.tool_call("run", {"command": "ls"}), fake_llama.prose("Done.")]
    with fake_llama.FakeLlama(flint_replies) as flint, fake_llama.FakeLlama([fake_llama.die()]) as jeff:
        settings = config(tmp_path, flint.url, use_jeff=True, jeff_url=jeff.url, reps=2)
        died, dead = Bench(settings, checkout=ROOT).run()
    assert died["stop_reason"] == "infra_error" and f"Jeff ({jeff.url}) died during the run" in died["error"]
    assert died["jeff_requests"] == "1"
    assert (died["jeff_prompt_tokens"], died["jeff_completion_tokens"], died["jeff_model_s"]) == ("", "", "")
    assert dead["stop_reason"] == "infra_error"
    assert f"Jeff: no healthy llama-server answers at {jeff.url}/health" in dead["error"]


@pytest.mark.usefixtures("child_processes")
def test_jeff_dead_before_the_first_run_stops_the_bench_naming_him(tmp_path: Path) -> None:
    gone = fake_llama.FakeLlama()
    url = gone.url
    gone.server.server_close()
    with fake_llama.FakeLlama() as flint, pytest.raises(ServerStartError, match=f"Jeff: .* at {url}/health"):
        Bench(config(tmp_path, flint.url, use_jeff=True, jeff_url=url), checkout=ROOT).run()


def test_a_counter_that_grew_less_than_the_answers_reported_is_a_restart_no_probe_saw() -> None:
    events = [{"t": 0.0, "event": "start"}, answered(1.0, 1), answered(2.0, 2)]
    for event in events[1:]:
        event["timings"]["prompt_n"] = 500
    (fault,) = judge([history(FLINT, (OK, 100), (OK, 100), (OK, 600))], events, 10).faults
    assert fault.endswith(
        "restarted during the run: its /metrics prompt_tokens_total grew by 500, less than the 1000 its answers "
        "reported"
    )
    assert judge([history(FLINT, (OK, 100), (OK, 1100))], events, 10).faults == []
