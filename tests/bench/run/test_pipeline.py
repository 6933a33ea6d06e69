"""The runner's pipeline with the fakes of bench.testing.fakes: no llama-server, no container, no agent process; the
plan, the work copy, observing, grading (local, real), the row and its file are the bench's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from small_task import SETTINGS, UNTOUCHED

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import ServerStartError
from bench.fixtures.fixture import load_fixture
from bench.results.append import read_rows
from bench.run.runner import Bench
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

SOLUTION = load_fixture("todo_repo", ROOT).solution_dir
SOLVED = {"todo.py": (SOLUTION / "todo.py").read_text(), "test_due.py": (SOLUTION / "test_due.py").read_text()}


def bench(tmp_path: Path, servers: FakeServers, runs: list[ScriptedRun], **changes: object) -> Bench:
    settings: dict[str, object] = {"use_jeff": False, "presets": ["part3"], "out": str(tmp_path / "results.csv")}
    config = BenchConfig(**(settings | changes))  # type: ignore[arg-type]
    return Bench(config, FakeFactory(config, servers, FakeSandboxes(servers, runs), checkout=ROOT), checkout=ROOT)


def test_a_scripted_solution_is_graded_and_its_trace_agrees_with_the_servers_counter(tmp_path: Path) -> None:
    servers = FakeServers()
    (row,) = bench(tmp_path, servers, [ScriptedRun(files=SOLVED, steps=3)]).run()
    assert (row["stop_reason"], row["steps"], row["hidden_passed"], row["hidden_total"]) == ("done", "3", "6", "6")
    assert row["files_changed"] == "1" and int(row["tests_added"]) >= 1
    assert row["prompt_tokens_reprocessed"] == row["prompt_tokens_metrics"] == str(900 + 1000 + 1100)
    assert row["error"] == "" and row["sandbox"] == "fake"
    assert read_rows(tmp_path / "results.csv") == [row]
    assert servers.starts == [4096] and servers.flint is None  # started once, stopped at the end


def test_a_failed_sandbox_is_an_infra_row_and_the_next_run_is_measured(tmp_path: Path) -> None:
    runs = [ScriptedRun(infra_error="the container did not start"), ScriptedRun()]
    bench(tmp_path, FakeServers(), runs, reps=2, **SETTINGS).run()  # the small task: the rows, not the grading
    failed, measured = read_rows(tmp_path / "results.csv")
    assert failed["stop_reason"] == "infra_error" and "the container did not start" in failed["error"]
    assert failed["prompt_tokens"] == ""  # no trace: not measured, never 0
    assert measured["stop_reason"] == "done" and measured["hidden_passed"] == UNTOUCHED[0]


def test_changes_that_could_not_be_read_back_are_not_graded(tmp_path: Path) -> None:
    bench(tmp_path, FakeServers(), [ScriptedRun(files=SOLVED, changes_lost="the tar stream stopped")]).run()
    (row,) = read_rows(tmp_path / "results.csv")
    assert "the tar stream stopped; the run is not graded" in row["error"]
    assert row["hidden_passed"] == "" and row["files_changed"] == ""


def test_a_server_dying_mid_run_is_recorded_and_the_next_run_gets_fresh_servers(tmp_path: Path) -> None:
    servers = FakeServers()
    runs = [ScriptedRun(kill_servers=True), ScriptedRun()]
    first, second = bench(tmp_path, servers, runs, reps=2, **SETTINGS).run()  # the small task: not about grading
    assert first["stop_reason"] == "infra_error" and "died during the run" in first["error"]
    assert first["steps"] == "1"  # what was measured before it died is kept
    assert second["stop_reason"] == "done" and servers.starts == [4096, 4096]


def test_servers_that_never_start_stop_the_bench_before_any_row(tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match="refused to start"):
        bench(tmp_path, FakeServers(fail_starts=1), []).run()
    assert not (tmp_path / "results.csv").exists()


def test_jeffs_window_is_the_presets_and_the_servers_start_again_only_when_it_changes(tmp_path: Path) -> None:
    """In part3 and part3+ Jeff answers a one-line question at jeff_ctx; in jeff-first he reads Flint's conversation,
    so his window is the run's own (jeff_conversation_ctx unset). The plan groups the runs by Jeff's window: two
    starts for three presets, and the rows key on the window and on jeff-first's K."""
    servers = FakeServers(jeff=True)
    presets = ["part3", "jeff-first", "part3+"]
    made = bench(tmp_path, servers, [ScriptedRun()] * 3, use_jeff=True, presets=presets, ctx=[2048], jeff_ctx=1024)
    assert [row["preset"] for row in made.run()] == ["part3", "part3+", "jeff-first"]  # grouped by Jeff's window
    rows = {row["preset"]: row for row in read_rows(tmp_path / "results.csv")}
    assert servers.starts == [2048, 2048] and servers.jeff_starts == [1024, 2048]
    assert (rows["part3"]["jeff_window"], rows["part3"]["jeff_first_steps"]) == ("", "")
    assert (rows["jeff-first"]["jeff_window"], rows["jeff-first"]["jeff_first_steps"]) == ("2048", "3")
    again = bench(tmp_path / "b", FakeServers(jeff=True), [ScriptedRun()], use_jeff=True, presets=["jeff-gate"])
    assert again.run()[0]["jeff_window"] == "4096"  # the run's ctx, not jeff_ctx


def test_jeffs_conversation_window_is_a_setting_and_external_servers_keep_theirs() -> None:
    from bench.run.plan import jeff_window

    config = BenchConfig(jeff_ctx=1024)
    assert [jeff_window(p, 8192, config) for p in ("part3", "summary", "summary-jeff", "jeff-first")] == [
        1024,
        1024,  # Flint writes summary's summaries: Jeff answers his one-line question
        8192,
        8192,
    ]
    assert jeff_window("jeff-gate", 8192, config.model_copy(update={"jeff_conversation_ctx": 16384})) == 16384
    assert jeff_window("jeff-first", 8192, config.model_copy(update={"servers": "external"})) == 1024
    assert jeff_window("jeff-first", 8192, config.model_copy(update={"use_jeff": False})) is None
