"""The wall time split into Flint, Jeff, tools and the harness's own, and the floor at the measured speeds
(bench/measure/time_split.py)."""

from __future__ import annotations

from typing import Any

from bench.measure.floor import BenchSpeeds, DepthSpeed
from bench.measure.time_split import ServerSpeeds, Speeds, fill_time_split, floor_seconds
from bench.measure.trace_numbers import trace_numbers
from bench.results.row import ResultRow

EVENTS: list[dict[str, Any]] = [
    {"t": 0, "event": "start", "n_ctx": 4096, "jeff": "http://jeff"},
    {
        "t": 1,
        "event": "response",
        "step": 1,
        "usage": {"prompt_tokens": 1000, "completion_tokens": 40},
        "timings": {"prompt_n": 1000, "cache_n": 0, "prompt_ms": 5000.0, "predicted_ms": 2000.0},
    },
    {
        "t": 2,
        "event": "jeff",
        "step": 1,
        "opinion": "Fine.",
        "seconds": 1.25,
        "usage": {"prompt_tokens": 90, "completion_tokens": 10},
        "timings": {"prompt_n": 90, "prompt_ms": 600.0, "predicted_ms": 400.0},
    },
    {"t": 3, "event": "tool", "step": 1, "name": "run", "seconds": 3.75},
    {"t": 4, "event": "stop", "reason": "step_limit", "steps": 1},
]
SPEEDS = ServerSpeeds(Speeds(prompt_tps=250.0, gen_tps=25.0), Speeds(prompt_tps=900.0, gen_tps=50.0))


def filled(wall_s: float, speeds: ServerSpeeds | None = SPEEDS, stall_s: float | None = 0.0) -> ResultRow:
    numbers = trace_numbers(EVENTS)
    row = ResultRow(wall_s=wall_s, tools_s=2.5, jeff_model_s=numbers.jeff_model_s)  # tools_s: 3.75 less Jeff's 1.25
    row.server_stall_s = stall_s
    fill_time_split(row, EVENTS, numbers, speeds, jeff_on=True)
    return row


def test_wall_time_is_the_sum_of_flint_jeff_tools_and_the_harness() -> None:
    row = filled(12.34)
    assert (row.flint_model_s, row.jeff_model_s, row.tools_s) == (7.0, 1.0, 2.5)
    assert row.own_s == 1.84
    assert row.wall_s == round(row.flint_model_s + row.jeff_model_s + row.tools_s + row.own_s, 2)


def test_a_servers_stall_is_its_own_part_not_the_harnesss() -> None:
    row = filled(12.34, stall_s=1.5)
    assert row.own_s == 0.34
    assert row.wall_s == round(row.flint_model_s + row.jeff_model_s + row.tools_s + 1.5 + row.own_s, 2)
    assert filled(12.34, stall_s=None).own_s is None  # a part not measured: the rest cannot be told


def test_the_floor_is_the_runs_tokens_at_the_measured_speeds() -> None:
    row = filled(12.34)
    flint = 1000 / 250 + 40 / 25  # 5.6 s
    jeff = 90 / 900 + 10 / 50  # 0.3 s
    assert row.floor_s == round(flint + jeff, 3) and row.efficiency == round((flint + jeff) / 12.34, 4)
    assert (row.flint_prompt_tps, row.jeff_gen_tps) == (250.0, 50.0)


def test_without_measured_speeds_there_is_no_floor_but_the_split_stands() -> None:
    row = filled(12.34, speeds=None)
    assert row.floor_s is None and row.efficiency is None and row.own_s == 1.84
    jeff_unmeasured = ServerSpeeds(SPEEDS.flint, None)
    assert floor_seconds(EVENTS, trace_numbers(EVENTS), jeff_unmeasured, jeff_on=True) is None
    assert floor_seconds(EVENTS, trace_numbers(EVENTS), jeff_unmeasured, jeff_on=False) == 5.6


def test_a_request_faster_than_the_calibration_raises_the_floors_speed_so_the_floor_stays_under_the_model_time() -> (
    None
):
    """A calibration taken in a busy moment (10 prompt tokens/s, 2 generated/s) would put the floor above the run's
    own model time; the run's own fastest request (1000 tokens in 5 s, 40 in 2 s) sets the speeds instead."""
    events = [{**e, "timings": {**e["timings"], "predicted_n": 40}} if e["event"] == "response" else e for e in EVENTS]
    slow = ServerSpeeds(Speeds(prompt_tps=10.0, gen_tps=2.0), Speeds(prompt_tps=900.0, gen_tps=50.0))
    numbers = trace_numbers(events)
    row = ResultRow(wall_s=12.34, tools_s=2.5, jeff_model_s=numbers.jeff_model_s)
    fill_time_split(row, events, numbers, slow, jeff_on=True)
    assert (row.flint_prompt_tps, row.flint_gen_tps) == (200.0, 20.0)  # the run's own: 1000 / 5 s, 40 / 2 s
    assert (row.jeff_prompt_tps, row.jeff_gen_tps) == (900.0, 50.0)  # the calibration was faster: kept
    assert row.floor_s == round(1000 / 200 + 40 / 20 + 90 / 900 + 10 / 50, 3) and row.floor_s <= 7.0 + 1.0
    assert row.efficiency is not None and row.efficiency < 1


def test_each_servers_model_time_is_its_prefill_and_its_decode() -> None:
    row = filled(12.34)
    assert (row.flint_prompt_s, row.flint_gen_s, row.jeff_prompt_s, row.jeff_gen_s) == (5.0, 2.0, 0.6, 0.4)
    assert row.flint_prompt_s + row.flint_gen_s == row.flint_model_s
    assert row.jeff_prompt_s + row.jeff_gen_s == row.jeff_model_s


def test_flints_time_outside_the_servers_timings_is_its_requests_latency_beyond_them() -> None:
    """The response at t=7.25 came 7.25 s after the start, its timings say 7 s: 0.25 s outside the server. One that
    came 1 s after the start with timings of 7 s cannot be told apart from a server's clock running ahead of the
    trace's: the column is empty (not known), never a negative time, which a results file
    refuses (bench/results/checks.py)."""
    events = [*EVENTS[:1], {"t": 7.25, "event": "response", "step": 1, "timings": EVENTS[1]["timings"]}]
    row = ResultRow(wall_s=8.0, tools_s=0.0)
    fill_time_split(row, events, trace_numbers(events), None, jeff_on=False)
    assert row.flint_http_s == 0.25
    assert filled(12.34).flint_http_s is None


BENCH = BenchSpeeds((DepthSpeed(0, 200.0, 20.0), DepthSpeed(1024, 100.0, 10.0)))
FAST_BENCH = BenchSpeeds((DepthSpeed(0, 2000.0, 200.0), DepthSpeed(1024, 1000.0, 100.0)))  # faster than EVENTS went
GENERATED = {"response": {"predicted_n": 40}, "jeff": {"predicted_n": 10, "cache_n": 0}}
BENCHED_EVENTS = [
    {**e, "timings": {**e["timings"], **GENERATED[e["event"]]}} if e["event"] in GENERATED else e for e in EVENTS
]


def test_with_llama_benchs_speeds_the_floor_is_the_requests_at_their_depths_and_the_overhead_the_rest() -> None:
    """Flint's request computes 1000 tokens from depth 0 (each at its middle depth, 500: 500/1024 of the way from
    1/2000 to 1/1000 s per token) and generates 40 after them (middle depth 1020); Jeff's likewise."""
    events = BENCHED_EVENTS
    speeds = ServerSpeeds(SPEEDS.flint, SPEEDS.jeff, FAST_BENCH, FAST_BENCH)
    numbers = trace_numbers(events)
    row = ResultRow(wall_s=12.34, tools_s=2.5, jeff_model_s=numbers.jeff_model_s)
    fill_time_split(row, events, numbers, speeds, jeff_on=True)

    def per_token(depth: float, fast: float, slow: float) -> float:
        return 1 / fast + depth / 1024 * (1 / slow - 1 / fast)

    flint = 1000 * per_token(500, 2000, 1000) + 40 * per_token(1020, 200, 100)
    jeff = 90 * per_token(45, 2000, 1000) + 10 * per_token(95, 200, 100)
    assert row.floor_method == "llama-bench" and row.floor_s == round(flint + jeff, 3)
    assert row.floor_depths == "0 1024"  # the depths Flint's speeds were measured at
    assert row.server_overhead_s == round(8.0 - row.floor_s, 3)
    assert row.efficiency == round(row.floor_s / 12.34, 4)


def test_a_request_faster_than_llama_benchs_cached_figure_counts_at_its_own_time() -> None:
    """llama-bench measured in a busy moment (10x slower than these requests went): each request then counts at its
    own server time, so the floor is the model time and the overhead 0, never below."""
    slow = BenchSpeeds((DepthSpeed(0, 20.0, 2.0),))
    numbers = trace_numbers(BENCHED_EVENTS)
    row = ResultRow(wall_s=12.34, tools_s=2.5, jeff_model_s=numbers.jeff_model_s)
    fill_time_split(row, BENCHED_EVENTS, numbers, ServerSpeeds(SPEEDS.flint, SPEEDS.jeff, slow, slow), jeff_on=True)
    assert row.floor_method == "llama-bench" and row.floor_s == 8.0 and row.server_overhead_s == 0.0


def test_without_llama_bench_the_floor_says_it_is_the_calibrations_and_there_is_no_overhead() -> None:
    row = filled(12.34)
    assert row.floor_method == "calibration" and row.server_overhead_s is None and row.floor_depths == ""
    assert filled(12.34, speeds=None).floor_method == ""


def test_a_jeff_answer_llama_bench_did_not_measure_leaves_the_floor_to_the_calibration() -> None:
    row = ResultRow(wall_s=12.34, tools_s=2.5)
    numbers = trace_numbers(EVENTS)
    fill_time_split(row, EVENTS, numbers, ServerSpeeds(SPEEDS.flint, SPEEDS.jeff, BENCH, None), jeff_on=True)
    assert row.floor_method == "calibration" and row.server_overhead_s is None


def test_depths_beyond_the_measured_ones_take_the_nearest_measured_speed() -> None:
    assert BENCH.prompt_s(100, -5) == 0.5 and BENCH.prompt_s(100, 5000) == 1.0
    assert BENCH.gen_s(10, 512) == 10 * (1 / 20 + 0.5 * (1 / 10 - 1 / 20))


def test_a_row_from_before_these_columns_reads_them_as_not_measured() -> None:
    old = ResultRow.from_cells({"run_id": "r1", "model_s": "8.0", "floor_s": "5.9"})
    assert (old.flint_prompt_s, old.flint_gen_s, old.server_overhead_s, old.flint_http_s) == (None, None, None, None)
    assert old.floor_method == "" and old.text("flint_prompt_s") == ""


# A summary Flint wrote (a request to Flint beside the steps'), one Jeff wrote, and one step Jeff took
# (jeff-first): each is work a server did, so each is in the floor at its server's speeds.
SUMMARY_AND_JEFF = [
    *BENCHED_EVENTS[:-1],
    {
        "t": 5,
        "event": "summary",
        "by": "flint",
        "request": 2,
        "applied": True,
        "usage": {"prompt_tokens": 500, "completion_tokens": 20},
        "timings": {"prompt_n": 500, "cache_n": 0, "predicted_n": 20, "prompt_ms": 2500.0, "predicted_ms": 1000.0},
    },
    {
        "t": 6,
        "event": "summary",
        "by": "jeff",
        "applied": True,
        "usage": {"prompt_tokens": 450, "completion_tokens": 10},
        "timings": {"prompt_n": 450, "cache_n": 0, "predicted_n": 10, "prompt_ms": 500.0, "predicted_ms": 200.0},
    },
    {
        "t": 7,
        "event": "jeff_step",
        "kind": "act",
        "tool_calls": 1,
        "usage": {"prompt_tokens": 900, "completion_tokens": 50},
        "timings": {"prompt_n": 900, "cache_n": 0, "predicted_n": 50, "prompt_ms": 1000.0, "predicted_ms": 1000.0},
    },
    BENCHED_EVENTS[-1],
]


def test_the_floor_counts_the_summaries_and_jeffs_steps_at_their_servers_speeds() -> None:
    numbers = trace_numbers(SUMMARY_AND_JEFF)
    row = ResultRow(wall_s=30.0, tools_s=2.5, jeff_model_s=numbers.jeff_model_s)
    fill_time_split(row, SUMMARY_AND_JEFF, numbers, SPEEDS, jeff_on=True)
    flint = (1000 + 500) / 250 + (40 + 20) / 25
    jeff = (90 + 450 + 900) / 900 + (10 + 10 + 50) / 50
    assert row.floor_method == "calibration" and row.floor_s == round(flint + jeff, 3)

    def benched(events: list[dict[str, Any]]) -> float | None:
        row = ResultRow(wall_s=30.0, tools_s=2.5, jeff_model_s=trace_numbers(events).jeff_model_s)
        speeds = ServerSpeeds(None, None, FAST_BENCH, FAST_BENCH)
        fill_time_split(row, events, trace_numbers(events), speeds, jeff_on=True)
        assert row.floor_method == "llama-bench" and row.floor_s is not None
        assert row.floor_s <= (trace_numbers(events).model_s or 0.0)  # a floor, never above the model time
        return row.floor_s

    steps_only = [e for e in SUMMARY_AND_JEFF if e["event"] not in ("summary", "jeff_step")]
    at = FAST_BENCH  # each part at its middle depth: a prompt from depth 0, its answer after it
    summary_s = at.prompt_s(500, 250) + at.gen_s(20, 510)
    jeff_s = at.prompt_s(450, 225) + at.gen_s(10, 455) + at.prompt_s(900, 450) + at.gen_s(50, 925)
    assert benched(SUMMARY_AND_JEFF) == round((benched(steps_only) or 0.0) + summary_s + jeff_s, 3)
