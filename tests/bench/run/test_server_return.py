"""Servers that come back (bench/run/server_return.py): the wait's back-off on a clock of the test's own, then the
bench against the scripted server as an external Flint that stops answering and comes back on the same port, or
never does; compose's servers, which the bench starts again once the wait ran out. (The real llama-server, down
8 s in run 2 of 8: tests/integration/test_server_return_real.py.)"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from small_task import CODE, SETTINGS

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ServerStartError
from bench.results.append import read_rows
from bench.run import server_watch
from bench.run.runner import Bench
from bench.run.server_return import MAX_POLL_S, wait_for_health
from bench.servers.kinds import KINDS
from bench.testing import fake_llama
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

# Every test here starts child processes (a bench, make, pytest, a program): the process tier (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

READ = fake_llama.tool_call("read_file", {"path": CODE})
DONE = fake_llama.prose("Done.")


class Clock:
    """Time that passes only when the wait sleeps; the server answers from `back_at` on."""

    def __init__(self, back_at: float) -> None:
        self.now, self.back_at = 0.0, back_at
        self.polls: list[float] = []

    def healthy(self, url: str) -> bool:
        self.polls.append(self.now)
        return self.now >= self.back_at

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_health_is_polled_every_second_until_the_server_answers_or_the_budget_runs_out() -> None:
    clock = Clock(back_at=3.2)
    waited = wait_for_health(["http://a"], 180, clock.healthy, lambda: clock.now, clock.sleep)
    assert clock.polls == [0.0, 0.5, 1.5, 2.5, 3.5]  # after 0.5 s, then a second apart: seen 0.3 s after it is back
    assert waited == 3.5
    never = Clock(back_at=1e9)
    assert wait_for_health(["http://a"], 20, never.healthy, lambda: never.now, never.sleep) is None
    assert (
        never.polls[-1] == 20.0 and max(b - a for a, b in zip(never.polls, never.polls[1:], strict=False)) == MAX_POLL_S
    )
    at_once = Clock(back_at=0.0)
    assert wait_for_health(["http://a"], 0.1, at_once.healthy, lambda: at_once.now, at_once.sleep) == 0.0


@pytest.fixture(autouse=True)
def quick_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_watch, "INTERVAL_S", 0.2)
    monkeypatch.setattr(server_watch, "HEALTH_TIMEOUT_S", 0.5)


def config(tmp_path: Path, flint_url: str, **changes: object) -> BenchConfig:
    """Runs of the suite's small task (tests/small_task.py): these tests read the outage, not the grading."""
    settings: dict[str, object] = SETTINGS | {
        "servers": "external",
        "sandbox": "local",
        "flint_url": flint_url,
        "use_jeff": False,
        "presets": ["part2"],
        "ctx": [4096],
        "max_steps": 4,
        "out": str(tmp_path / "results.csv"),
        "agent_retries": 0,
        "agent_retry_delay_s": 0.05,
    }
    return BenchConfig(**(settings | changes))  # type: ignore[arg-type]


def restart_after(first: fake_llama.FakeLlama, down_s: float, later: list[fake_llama.FakeLlama]) -> threading.Thread:
    """A supervisor that starts the server again on its port `down_s` after it died."""
    port = first.server.server_address[1]

    def come_back() -> None:
        while first.thread is not None or not first.stopped.is_set():
            time.sleep(0.01)
        time.sleep(down_s)
        later.append(fake_llama.FakeLlama(default=DONE, port=port).start())

    thread = threading.Thread(target=come_back)
    thread.start()
    return thread


def test_a_flint_that_dies_mid_run_and_comes_back_costs_only_the_attempt_it_cut_short(tmp_path: Path) -> None:
    first = fake_llama.FakeLlama([READ, fake_llama.die()]).start()
    later: list[fake_llama.FakeLlama] = []
    supervisor = restart_after(first, 1.0, later)  # back after 1 s: past the wait's first two polls
    try:
        (row,) = Bench(config(tmp_path, first.url), checkout=ROOT).run()
    finally:
        supervisor.join()
        for fake in later:
            fake.stop()
    assert row["stop_reason"] == "done"  # not infra_error: the run ran again once Flint was back
    assert row["error"].startswith("re-run: ") and "died during the run" in row["error"]
    assert row["reprocessed_check"] == "ok"  # the re-run counted on the new server alone
    (attempt,) = (tmp_path / "runs").glob("*.interrupted")  # the attempt's folder is kept, and says it has no row
    assert attempt.name.split(".")[0] in row["error"] and (attempt / "events.jsonl").is_file()
    assert read_rows(tmp_path / "results.csv") == [row]


def test_a_flint_down_between_runs_is_waited_for_and_the_next_run_runs_normally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = fake_llama.FakeLlama([DONE]).start()
    later: list[fake_llama.FakeLlama] = []
    write_row = Bench._record

    def outage_after_the_first_row(bench: Bench, *args: object) -> None:  # the server goes once the row is written
        write_row(bench, *args)  # type: ignore[arg-type]
        if not later:
            first.stop()
            later.append(first)
            threading.Timer(1.0, lambda: later.append(fake_llama.FakeLlama(default=DONE, port=port).start())).start()

    port = first.server.server_address[1]
    monkeypatch.setattr(Bench, "_record", outage_after_the_first_row)
    try:
        started = time.monotonic()
        rows = Bench(config(tmp_path, first.url, reps=2), checkout=ROOT).run()
        took = time.monotonic() - started
    finally:
        for fake in later[1:]:
            fake.stop()
    assert [r["stop_reason"] for r in rows] == ["done", "done"] and rows[1]["error"] == ""
    assert not list((tmp_path / "runs").glob("*.interrupted"))  # no run was cut short: the second one waited
    assert took >= 1.0


def test_a_flint_gone_for_good_books_the_run_it_cut_short_and_stops_the_bench_in_one_line(tmp_path: Path) -> None:
    with fake_llama.FakeLlama([READ, fake_llama.die()]) as flint:
        started = time.monotonic()
        with pytest.raises(ServerStartError, match="did not answer /health again within server_wait_s=1.5"):
            Bench(config(tmp_path, flint.url, reps=3, server_wait_s=1.5), checkout=ROOT).run()
        waited = time.monotonic() - started
    (row,) = read_rows(tmp_path / "results.csv")  # the runs after it are not burnt: --resume runs them later
    assert row["stop_reason"] == "infra_error" and "died during the run" in row["error"]
    assert "the servers did not answer again within server_wait_s=1.5" in row["error"]
    assert waited >= 1.5


class GoneServers(FakeServers):
    """Servers whose Flint, killed mid-run, is gone for good (its container removed): /health is refused."""

    def kill(self) -> None:
        super().kill()
        if self.flint is not None:
            self.flint.stop()


def test_compose_servers_that_do_not_come_back_are_waited_for_then_started_again(tmp_path: Path) -> None:
    servers = GoneServers()
    settings = BenchConfig(
        **SETTINGS, use_jeff=False, presets=["part3"], reps=2, server_wait_s=1.0, out=str(tmp_path / "r.csv")
    )
    factory = FakeFactory(
        settings, servers, FakeSandboxes(servers, [ScriptedRun(kill_servers=True), ScriptedRun()]), checkout=ROOT
    )
    factory.server_kind = replace(
        KINDS["compose"], make=lambda making: servers, needs_gpu_probe=False, needs_docker=False, pins_a_card=False
    )
    started = time.monotonic()
    first, second = Bench(settings, factory, checkout=ROOT).run()
    assert time.monotonic() - started >= 1.0  # server_wait_s was waited out before the restart
    assert first["stop_reason"] == "infra_error" and "did not answer again within server_wait_s=1" in first["error"]
    assert second["stop_reason"] == "done" and second["error"] == ""
    assert servers.starts == [4096, 4096]  # compose's servers are started again by the bench; external ones are not
