"""Speculative decoding's figures: the answers' draft_n and draft_n_accepted summed (an answer llama-server drafted
nothing for carries neither), and the sums checked against the rise of Flint's /metrics counters over the run."""

from __future__ import annotations

import pytest

from bench.measure.speculative import ACCEPTED, DRAFTED, check_drafts
from bench.measure.trace_numbers import trace_numbers
from bench.results.row import ResultRow
from bench.results.schema import SETUP_COLUMNS


def answer(step: int, drafted: int | None = None, accepted: int | None = None) -> dict:
    timings = {"cache_n": 0, "prompt_n": 50, "prompt_ms": 5.0, "predicted_n": 20, "predicted_ms": 9.0}
    if drafted is not None:
        timings |= {"draft_n": drafted, "draft_n_accepted": accepted}
    usage = {"prompt_tokens": 50, "completion_tokens": 20}
    return {"event": "response", "step": step, "finish_reason": "tool_calls", "usage": usage, "timings": timings}


START = {"event": "start", "n_ctx": 1024}
# b11434 on SmolLM2 with --spec-type ngram-simple: three answers' timings and the counters' rise they made
DRAFTING = [START, answer(1, 64, 33), answer(2), answer(3, 56, 30)]


def counters(drafted: float, accepted: float) -> dict[str, float]:
    return {"llamacpp:prompt_tokens_total": 7.0, DRAFTED: drafted, ACCEPTED: accepted}


def test_drafts_are_summed_and_an_answer_without_them_drafted_nothing() -> None:
    numbers = trace_numbers(DRAFTING)
    assert (numbers.draft_tokens, numbers.draft_accepted) == (120, 63)
    assert check_drafts(numbers, counters(10, 4), counters(130, 67)).status == "ok"


def test_a_server_that_drafts_nothing_leaves_every_draft_column_empty() -> None:
    numbers = trace_numbers([START, answer(1), answer(2)])
    assert (numbers.draft_tokens, numbers.draft_accepted) == (None, None)
    check = check_drafts(numbers, counters(0, 0), counters(0, 0))
    assert (check.status, check.drafted, check.accepted, check.note) == ("", None, None, None)
    assert check_drafts(numbers, None, None).status == ""  # nothing to check either way
    row = ResultRow()
    assert row.cells()["draft_tokens"] == "" and row.cells()["draft_check"] == ""


def test_an_answer_without_timings_leaves_the_sums_empty_not_smaller() -> None:
    no_timings = {"event": "response", "step": 4, "usage": {"prompt_tokens": 50, "completion_tokens": 20}}
    numbers = trace_numbers([*DRAFTING, no_timings])
    assert numbers.draft_tokens is None
    check = check_drafts(numbers, counters(0, 0), counters(140, 70))
    assert (check.status, check.drafted, check.accepted) == ("unchecked", 140, 70)


def test_sums_that_differ_from_the_counters_are_a_mismatch_named_in_error() -> None:
    check = check_drafts(trace_numbers(DRAFTING), counters(0, 0), counters(121, 63))
    assert check.status == "mismatch"
    assert check.note == "draft tokens: trace 120 drafted, 63 accepted; /metrics 121 drafted, 63 accepted"


def test_a_request_never_answered_may_have_drafted_what_no_answer_reports() -> None:
    numbers = trace_numbers([*DRAFTING, {"event": "unanswered", "step": 4}])
    check = check_drafts(numbers, counters(0, 0), counters(150, 70))
    assert check.status == "unchecked" and "never answered" in (check.note or "")


@pytest.mark.parametrize(
    ("before", "after", "restarted", "status"),
    [
        (counters(200, 90), counters(5, 1), False, "counter_reset"),  # went down: a new process
        (counters(0, 0), counters(120, 63), True, "counter_reset"),  # the watch saw the restart
        (None, counters(120, 63), False, "unchecked"),  # /metrics not read
        ({"llamacpp:prompt_tokens_total": 1.0}, {"llamacpp:prompt_tokens_total": 9.0}, False, "unchecked"),
        (counters(0, 0), counters(float("nan"), 63), False, "unchecked"),
    ],
)
def test_counters_that_cannot_be_trusted_check_nothing(
    before: dict | None, after: dict | None, restarted: bool, status: str
) -> None:
    check = check_drafts(trace_numbers(DRAFTING), before, after, restarted)
    assert (check.status, check.drafted, check.accepted) == (status, None, None)
    assert check.note


def test_drafts_past_the_window_are_read_but_a_negative_count_is_left_out() -> None:
    numbers = trace_numbers([START, answer(1, 5000, 4000)])  # drafts of a long answer may exceed the window
    assert (numbers.draft_tokens, numbers.draft_accepted, numbers.problems) == (5000, 4000, ())
    numbers = trace_numbers([START, answer(1, -3, 0)])
    assert numbers.draft_tokens is None and "draft_n = -3 is negative" in numbers.problems[0]


def test_how_flint_drafts_keys_a_comparison() -> None:
    assert {"spec_type", "draft_model"} <= set(SETUP_COLUMNS)
