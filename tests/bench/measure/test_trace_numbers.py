"""The row's figures from a trace: sums of what the servers reported, empty when any part is missing."""

import math

import pytest

from bench.measure.trace_numbers import cached_mismatch, check_reprocessed, trace_numbers


def response(step: int, prompt: int, cached: int, completion: int, prompt_ms: float, predicted_ms: float) -> dict:
    return {
        "t": step,
        "event": "response",
        "step": step,
        "finish_reason": "tool_calls",
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        "timings": {
            "cache_n": cached,
            "prompt_n": prompt - cached,
            "prompt_ms": prompt_ms,
            "predicted_n": completion,
            "predicted_ms": predicted_ms,
        },
    }


TRACE = [
    {"t": 0, "event": "start", "n_ctx": 4096, "jeff": "http://jeff:8081"},
    response(1, 1000, 0, 100, 500.0, 1000.0),
    {
        "t": 2,
        "event": "jeff",
        "step": 1,
        "opinion": "yes, harmless",
        "usage": {"prompt_tokens": 40, "completion_tokens": 6},
        "timings": {"prompt_ms": 50.0, "predicted_ms": 150.0},
    },
    {"t": 3, "event": "clear", "step": 1, "reason": "threshold", "changed": 3},
    {"t": 3, "event": "clear", "step": 1, "reason": "threshold", "changed": 0},
    {
        "t": 4,
        "event": "http_error",
        "step": 2,
        "status": 400,
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    },
    response(2, 1800, 600, 50, 800.0, 200.0),
    {"t": 5, "event": "cut", "step": 3, "kind": "length", "dropped": True},
    {"t": 6, "event": "stop", "reason": "done", "steps": 3},
]


def test_sums_come_from_the_servers_numbers() -> None:
    n = trace_numbers(TRACE)
    assert n.prompt_tokens == 2800
    assert n.prompt_tokens_reprocessed == 2200  # 1000 + 1200
    assert n.cache_tokens == 600 and n.completion_tokens == 150
    assert n.max_request_tokens == 5000  # the refused request was the largest
    assert n.model_s == 2.7  # Flint 2.5 s + Jeff 0.2 s
    assert (n.jeff_model_s, n.jeff_prompt_tokens, n.jeff_completion_tokens, n.jeff_requests) == (0.2, 40, 6, 1)
    assert n.clearings == 1  # a clearing that changed nothing is not counted
    assert n.cut_answers == 1 and n.context_400s == 1
    assert (n.stop_reason, n.steps, n.claimed_done, n.start_n_ctx) == ("done", 2, True, 4096)


def test_steps_count_answered_requests_only() -> None:
    never_answered = [
        {"t": 0, "event": "start", "jeff": None},
        {"t": 1, "event": "stop", "reason": "server_error", "steps": 1},
    ]
    assert trace_numbers(never_answered).steps == 0


def test_a_trace_without_responses_leaves_token_columns_unmeasured() -> None:
    n = trace_numbers([{"t": 0, "event": "start", "jeff": None}])
    assert n.prompt_tokens is None and n.prompt_tokens_reprocessed is None and n.max_request_tokens is None
    assert n.model_s is None and n.stop_reason is None and n.claimed_done is None


@pytest.mark.parametrize(
    ("where", "field", "column"),
    [
        ("timings", "prompt_ms", "model_s"),
        ("timings", "predicted_ms", "model_s"),
        ("timings", "prompt_n", "prompt_tokens_reprocessed"),
        ("timings", "cache_n", "cache_tokens"),
        ("usage", "prompt_tokens", "prompt_tokens"),
        ("usage", "prompt_tokens", "max_request_tokens"),
        ("usage", "completion_tokens", "completion_tokens"),
    ],
)
def test_one_response_without_a_field_makes_the_sum_unmeasured_not_smaller(where: str, field: str, column: str) -> None:
    damaged = [dict(e) for e in TRACE]
    damaged[1] = {**damaged[1], where: {k: v for k, v in damaged[1][where].items() if k != field}}
    assert getattr(trace_numbers(damaged), column) is None
    assert getattr(trace_numbers(TRACE), column) is not None


def test_jeff_off_leaves_his_columns_unmeasured_and_jeff_unasked_is_zero() -> None:
    flint_only = [e for e in TRACE if e["event"] != "jeff"]
    off = trace_numbers([{**flint_only[0], "jeff": None}, *flint_only[1:]])
    assert (off.jeff_model_s, off.jeff_prompt_tokens, off.jeff_requests) == (None, None, 0)
    assert off.model_s == 2.5
    unasked = trace_numbers(flint_only)
    assert (unasked.jeff_model_s, unasked.jeff_prompt_tokens, unasked.jeff_completion_tokens) == (0.0, 0, 0)


def test_jeff_without_timings_makes_model_time_unmeasured() -> None:
    damaged = [dict(e) for e in TRACE]
    damaged[2] = {**damaged[2], "timings": None}
    n = trace_numbers(damaged)
    assert n.model_s is None and n.jeff_model_s is None


def test_cross_check_against_the_metrics_counter() -> None:
    n = trace_numbers(TRACE)
    ok = check_reprocessed(n, 100.0, 2300.0)
    assert (ok.status, ok.metrics_delta, ok.note) == ("ok", 2200, None)
    off = check_reprocessed(n, 0.0, 2300.0)
    assert off.status == "mismatch" and "trace sum 2200 != /metrics delta 2300" in (off.note or "")
    unparsed = trace_numbers(TRACE + [{"t": 7, "event": "cut", "kind": "unparsed"}])
    assert "HTTP 500" in (check_reprocessed(unparsed, 0.0, 2900.0).note or "")
    assert check_reprocessed(n, None, 2200.0).status == "unchecked"


@pytest.mark.parametrize(("before", "after"), [(math.nan, 10.0), (0.0, math.inf), (math.nan, math.nan)])
def test_a_counter_that_is_not_a_number_is_unchecked_not_a_crash(before: float, after: float) -> None:
    check = check_reprocessed(trace_numbers(TRACE), before, after)
    assert check.status == "unchecked" and check.metrics_delta is None


def test_a_counter_that_went_down_means_the_server_restarted() -> None:
    check = check_reprocessed(trace_numbers(TRACE), 5000.0, 120.0)
    assert check.status == "counter_reset" and check.metrics_delta is None and "restarted" in (check.note or "")


def test_jeff_asked_but_never_answering_leaves_his_figures_empty_not_zero() -> None:
    silent = [
        {**e, "opinion": None, "usage": None, "timings": None, "error": "timed out"} if e["event"] == "jeff" else e
        for e in TRACE
    ]
    n = trace_numbers(silent)
    assert (n.jeff_model_s, n.jeff_prompt_tokens, n.jeff_completion_tokens, n.jeff_requests) == (None, None, None, 1)
    assert n.model_s == 2.5  # Flint's answers are still measured: Jeff's unanswered requests add no server time


@pytest.mark.parametrize(
    ("usage", "says"),
    [
        ({"prompt_tokens": -5, "completion_tokens": 100}, "prompt_tokens = -5 is negative"),
        ({"prompt_tokens": 1000, "completion_tokens": 1e308}, "completion_tokens = 1e+308 is above the 4096-token"),
        ({"prompt_tokens": 1000, "completion_tokens": math.inf}, "completion_tokens = inf is not finite"),
        ({"prompt_tokens": 1000.5, "completion_tokens": 100}, "is not a whole number of tokens"),
        ({"prompt_tokens": {"nested": 1000}, "completion_tokens": 100}, "is not a number (dict)"),
        ({"prompt_tokens": True, "completion_tokens": 100}, "is not a number (bool)"),
        ([1000, 100], "usage is list, not an object"),
    ],
    ids=["negative", "huge", "infinite", "fraction", "nested", "bool", "not an object"],
)
def test_an_unreadable_server_figure_empties_its_sums_with_a_note(usage: object, says: str) -> None:
    damaged = [dict(e) for e in TRACE]
    damaged[1] = {**damaged[1], "usage": usage}

    n = trace_numbers(damaged, window=4096)

    assert n.prompt_tokens is None or n.completion_tokens is None
    assert len(n.problems) == 1 and says in n.problems[0] and "step 1" in n.problems[0]
    assert n.prompt_tokens_reprocessed == 2200  # the timings were sound: their sums stand


@pytest.mark.parametrize(
    ("timings", "says"),
    [({"prompt_ms": -1.0}, "prompt_ms = -1.0 is negative"), ({"prompt_n": 5000}, "above the 4096-token window")],
)
def test_unreadable_timings_are_left_out_too(timings: dict[str, float], says: str) -> None:
    damaged = [dict(e) for e in TRACE]
    damaged[1] = {**damaged[1], "timings": {**damaged[1]["timings"], **timings}}

    n = trace_numbers(damaged)  # the window from the trace's start event

    assert says in n.problems[0] and (n.model_s is None or n.prompt_tokens_reprocessed is None)


def test_a_refused_requests_size_may_exceed_the_window_but_not_absurdly() -> None:
    assert trace_numbers(TRACE, window=4096).max_request_tokens == 5000
    absurd = [{**e, "n_prompt_tokens": 10**12} if e.get("event") == "http_error" else e for e in TRACE]
    n = trace_numbers(absurd, window=4096)
    assert n.max_request_tokens is None and "n_prompt_tokens = 1000000000000 is above" in n.problems[0]


def test_a_sound_trace_has_no_problems() -> None:
    assert trace_numbers(TRACE, window=4096).problems == ()


def with_cached(event: dict, cached: object) -> dict:
    """A response whose OpenAI usage also says the cached tokens, as b11434 sends it."""
    return {**event, "usage": {**event["usage"], "prompt_tokens_details": {"cached_tokens": cached}}}


def test_the_usages_cached_tokens_are_summed_beside_cache_n_and_a_difference_is_noted() -> None:
    answers = [response(1, 1000, 0, 100, 500.0, 1000.0), response(2, 1800, 600, 50, 800.0, 200.0)]
    agreeing = trace_numbers([TRACE[0], with_cached(answers[0], 0), with_cached(answers[1], 600)])
    assert (agreeing.cached_tokens, agreeing.cache_tokens, cached_mismatch(agreeing)) == (600, 600, None)
    differing = trace_numbers([TRACE[0], with_cached(answers[0], 0), with_cached(answers[1], 590)])
    assert cached_mismatch(differing) == (
        "cached tokens: usage.prompt_tokens_details.cached_tokens sum 590 != timings.cache_n sum 600"
    )
    one_without = trace_numbers([TRACE[0], answers[0], with_cached(answers[1], 600)])
    assert one_without.cached_tokens is None and cached_mismatch(one_without) is None  # not measured: nothing said
    unreadable = trace_numbers([TRACE[0], with_cached(answers[0], -1), with_cached(answers[1], 600)])
    assert unreadable.cached_tokens is None and "cached_tokens = -1 is negative" in unreadable.problems[0]
