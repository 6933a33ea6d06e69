"""The window's high-water mark: the most tokens one of Flint's answers filled, beside llama-server's lifetime
n_tokens_max, which is a figure of the run only where it rose during it and counts what was decoded into the slot."""

from __future__ import annotations

from bench.measure.trace_numbers import trace_numbers
from bench.measure.window_peak import COUNTER, WindowPeak, check_peak

START = {"event": "start", "n_ctx": 1024}


def answer(step: int, cache_n: int, prompt_n: int, predicted_n: int, drafted: int | None = None) -> dict:
    timings = {"cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": 5.0, "predicted_n": predicted_n}
    timings["predicted_ms"] = 9.0
    if drafted is not None:
        timings |= {"draft_n": drafted, "draft_n_accepted": drafted // 2}
    usage = {"prompt_tokens": cache_n + prompt_n, "completion_tokens": predicted_n}
    return {"event": "response", "step": step, "finish_reason": "tool_calls", "usage": usage, "timings": timings}


def metrics(n_tokens_max: float) -> dict[str, float]:
    return {"llamacpp:prompt_tokens_total": 7.0, COUNTER: n_tokens_max}


# The smaller prompt with the longer answer fills more: the peak is prompt and answer together, not the largest prompt.
PLAIN = [START, answer(1, 0, 60, 19), answer(2, 60, 8, 40), answer(3, 70, 5, 2)]


def test_the_answers_peak_is_the_most_one_answer_filled_prompt_and_answer_together() -> None:
    numbers = trace_numbers(PLAIN)
    assert numbers.n_tokens_max == 108 and numbers.max_request_tokens == 75


def test_an_answer_without_timings_leaves_the_peak_unknown_not_smaller() -> None:
    no_timings = {"event": "response", "step": 4, "usage": {"prompt_tokens": 50, "completion_tokens": 20}}
    assert trace_numbers([*PLAIN, no_timings]).n_tokens_max is None
    assert trace_numbers([START]).n_tokens_max is None


def test_a_counter_that_rose_is_the_runs_peak_one_fewer_than_the_answers() -> None:
    """b11434 on a server started for the run: 0 before, then the slot's most, the last token never decoded."""
    peak = check_peak(trace_numbers(PLAIN), metrics(0), metrics(107))
    assert (peak.metrics, peak.note) == (107, None)


def test_a_counter_that_did_not_rise_says_nothing_of_the_run() -> None:
    """An earlier run on the same server went as high or higher: the lifetime maximum is not this run's."""
    assert check_peak(trace_numbers(PLAIN), metrics(400), metrics(400)).metrics is None


def test_drafts_in_flight_may_raise_the_counter_past_the_answers() -> None:
    drafting = [START, answer(1, 0, 100, 27, drafted=16)]
    numbers = trace_numbers(drafting)
    assert numbers.n_tokens_max == 127
    above = check_peak(numbers, metrics(0), metrics(130))  # b11434 with ngram-simple: three drafts not accepted
    assert (above.metrics, above.note) == (130, None)
    below = check_peak(numbers, metrics(0), metrics(120))
    assert below.metrics == 120 and "at least one fewer expected" in str(below.note)


def test_a_gap_that_b11434_does_not_explain_is_noted_with_what_may_explain_it() -> None:
    unanswered = {"event": "unanswered", "step": 4}
    peak = check_peak(trace_numbers([*PLAIN, unanswered]), metrics(0), metrics(300))
    assert peak.metrics == 300
    assert "/metrics 300, the answers' peak 108 (exactly one fewer expected" in str(peak.note)
    assert "1 request(s) were never answered" in str(peak.note)


def test_a_restart_or_an_unread_counter_leaves_the_cell_empty() -> None:
    numbers = trace_numbers(PLAIN)
    # a restart is noted by the reprocessed and draft checks already: no third note
    assert check_peak(numbers, metrics(0), metrics(107), restarted=True) == WindowPeak(None, None)
    assert check_peak(numbers, metrics(500), metrics(107)) == WindowPeak(None, None)  # went down: restarted
    assert check_peak(numbers, None, metrics(107)) == check_peak(numbers, {"other": 1.0}, metrics(107))
    assert check_peak(numbers, None, metrics(107)).metrics is None
    assert check_peak(numbers, metrics(float("nan")), metrics(107)).metrics is None
