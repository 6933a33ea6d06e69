"""What happens after the agent's stop line belongs to the run that ended (bench/run/observe.py): a server that dies
then does not make a finished run infra_error, nor run it again (the next run finds the servers gone and waits, as
before); a stop that lands then waits for the run's row (bench/run/finishing.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from small_task import SETTINGS

from bench.config import BenchConfig
from bench.results.append import read_rows
from bench.run import server_watch
from bench.run.finishing import FINISHING
from bench.run.runner import Bench
from bench.run.server_faults import judge
from bench.run.server_watch import OK, REFUSED, History, Probe, ServerWatch, Watched
from bench.testing import fake_llama

FLINT = Watched("Flint", "http://127.0.0.1:9")
CHECKOUT = Path(__file__).resolve().parents[3]


class StoppedLate(KeyboardInterrupt):
    """A stop that came after the agent's stop line, before its sandbox ended."""


def probe(t: float, health: str) -> Probe:
    return Probe(t, health, None)


def test_a_death_after_the_probe_at_the_agents_stop_is_not_the_runs() -> None:
    at_stop = probe(2.5, OK)
    dead = History(FLINT, [probe(0, OK), probe(1, OK), probe(2, OK), at_stop, probe(3, REFUSED)], at_stop)
    verdict = judge([dead], [], 10)
    assert verdict.faults == [] and verdict.outages == []
    assert verdict.after_stop == [
        "Flint (http://127.0.0.1:9) died during the run (refusing connections since t=3.0 s), after the agent's stop "
        "(t=2.5 s)"
    ]


def test_a_death_before_the_agents_stop_or_without_an_answer_then_is_the_runs() -> None:
    silent = probe(2.5, REFUSED)  # no answer when the agent stopped: it may have died before
    for history in (
        History(
            FLINT, [probe(0, OK), probe(1, REFUSED), probe(2, OK), probe(2.5, OK), probe(3, REFUSED)], probe(2.5, OK)
        ),
        History(FLINT, [probe(0, OK), probe(1, OK), silent, probe(3, REFUSED)], silent),
        History(FLINT, [probe(0, OK), probe(1, OK), probe(3, REFUSED)]),  # the stop line never seen
    ):
        verdict = judge([history], [], 10)
        assert verdict.outages and verdict.after_stop == [], history


@pytest.mark.processes
def test_a_flint_that_dies_after_the_agents_stop_keeps_the_run_graded_and_a_stop_then_waits_for_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_watch, "INTERVAL_S", 0.2)
    flint = fake_llama.FakeLlama([fake_llama.prose("Done.")]).start()
    seen = ServerWatch.agent_stopped
    held: list[bool] = []

    def dies_after_the_stop(watch: ServerWatch) -> None:
        seen(watch)
        held.append(FINISHING.hold(threading.main_thread().ident, StoppedLate))  # as SIGTERM's handler asks
        flint.stop()  # gone before the sandbox has ended the agent's process
        time.sleep(0.5)  # the watch sees it refuse

    monkeypatch.setattr(ServerWatch, "agent_stopped", dies_after_the_stop)
    settings: dict[str, object] = SETTINGS | {
        "servers": "external",
        "sandbox": "local",
        "flint_url": flint.url,
        "use_jeff": False,
        "presets": ["part2"],
        "ctx": [4096],
        "max_steps": 2,
        "out": str(tmp_path / "results.csv"),
        "server_wait_s": 1,
    }
    with pytest.raises(StoppedLate):  # raised once the row was written
        Bench(BenchConfig(**settings), checkout=CHECKOUT).run()  # type: ignore[arg-type]
    assert held == [True]
    (row,) = read_rows(tmp_path / "results.csv")
    assert row["stop_reason"] == "done" and row["hidden_total"] == "3", row  # measured and graded
    assert "after the agent's stop" in row["error"] and "the run is kept" in row["error"], row["error"]
    assert not list((tmp_path / "runs").glob("*.interrupted"))
