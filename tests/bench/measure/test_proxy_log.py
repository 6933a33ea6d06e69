"""The recording proxy's log read as a trace: the same figures as the article's own trace gives."""

from __future__ import annotations

import json

from bench.measure.proxy_log import proxy_events, read_exchanges, stop_reason
from bench.measure.stall import server_stall
from bench.measure.trace_numbers import check_reprocessed, trace_numbers

CHAT = "POST /v1/chat/completions"


def exchange(prompt_n: int, cache_n: int, finish: str = "stop", **extra: object) -> dict[str, object]:
    timings = {"prompt_n": prompt_n, "cache_n": cache_n, "prompt_ms": 10.0, "predicted_n": 5, "predicted_ms": 20.0}
    usage = {"prompt_tokens": prompt_n + cache_n, "completion_tokens": 5, "total_tokens": prompt_n + cache_n + 5}
    return {"t": 1.0, "route": CHAT, "status": 200, "usage": usage, "timings": timings, "finish_reason": finish} | extra


def test_the_logs_requests_give_steps_tokens_cut_answers_and_context_400s() -> None:
    refused = {"route": CHAT, "status": 400, "error": {"type": "exceed_context_size_error", "n_prompt_tokens": 5000}}
    lines = [
        {"route": "GET /props", "status": 200},
        exchange(700, 0),
        exchange(90, 700, finish="length", streamed=True),
        refused,
        exchange(40, 790, finish="max_tokens"),  # the Messages dialect's cut
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + '{"t": 9, "route": "POST /v1/chat/comp'  # cut short
    events = proxy_events(read_exchanges(text), 4096, "done")
    numbers = trace_numbers(events)
    assert (numbers.steps, numbers.stop_reason, numbers.cut_answers, numbers.context_400s) == (3, "done", 2, 1)
    assert numbers.prompt_tokens_reprocessed == 830 and numbers.max_request_tokens == 5000
    assert check_reprocessed(numbers, 100.0, 930.0).status == "ok"
    assert check_reprocessed(numbers, 100.0, 931.0).status == "mismatch"


def test_the_agents_own_time_before_a_request_is_not_the_servers() -> None:
    """The proxy notes when each request came: 20 s of an agent's start-up before its first request is not a stall."""
    first = exchange(700, 0) | {"t_sent": 20.0, "t": 20.05}
    second = exchange(90, 700) | {"t_sent": 25.0, "t": 25.05}
    events = proxy_events([first, second], 4096, "step_limit")
    assert [e["event"] for e in events] == ["start", "request", "response", "request", "response", "stop"]
    assert server_stall(events).seconds == 0.0
    assert server_stall([e for e in events if e["event"] != "request"]).flint_s > 19  # what it was without them


def test_a_request_the_agent_was_killed_waiting_for_keeps_the_row_checked_or_says_why_not() -> None:
    """An unanswered request (the proxy's `in_flight`, or an answer cut before its final chunk) has no timings: the
    answered ones' sum is still checked against /metrics, which counts a prompt only once its prefill ended."""
    waiting = {"t": 3.0, "route": CHAT, "request": {"stream": True}, "status": None, "in_flight": True}
    cut = {"t": 3.0, "route": CHAT, "status": 200, "streamed": True, "answer_cut": "the answer did not end"}
    only = trace_numbers(proxy_events([waiting], 4096, "interrupted"))
    assert (only.steps, only.unanswered, only.prompt_tokens_reprocessed) == (0, 1, 0)
    assert check_reprocessed(only, 100.0, 100.0).status == "ok"  # dropped during its prefill: nothing counted
    after_one = trace_numbers(proxy_events([exchange(700, 0), cut], 4096, "interrupted"))
    assert (after_one.steps, after_one.unanswered, after_one.prompt_tokens_reprocessed) == (1, 1, 700)
    assert check_reprocessed(after_one, 0.0, 700.0).status == "ok"
    counted = check_reprocessed(after_one, 0.0, 1250.0)  # its prefill had ended: counted, never reported
    assert counted.status == "unchecked" and counted.metrics_delta == 1250
    assert counted.note and "550 tokens more than the answers' sum 700" in counted.note
    assert check_reprocessed(after_one, 0.0, 650.0).status == "mismatch"  # fewer than answered: no excuse
    unanswered = [e for e in proxy_events([waiting], 4096, "interrupted") if e["event"] == "unanswered"]
    assert unanswered[0]["streamed"] is False and unanswered[0]["answer_begun"] is False


def test_a_messages_answer_cut_after_its_stream_began_counts_its_prompt() -> None:
    """Claude Code's first answer on two cores was cut at the proxy's 900 s: its message_start had given the prompt's
    12,248 tokens computed, which /metrics counted, so the row's sum keeps them and the check holds."""
    usage = {"input_tokens": 12248, "cache_read_input_tokens": 0, "output_tokens": 0}
    cut = {"t": 900.0, "route": "POST /v1/messages", "status": 200, "streamed": True, "usage": usage, "answer_cut": "x"}
    numbers = trace_numbers(proxy_events([cut], 16384, "interrupted"))
    assert (numbers.steps, numbers.unanswered, numbers.prompt_tokens_reprocessed) == (1, 0, 12248)
    assert check_reprocessed(numbers, 0.0, 12248.0).status == "ok"


def test_a_messages_run_is_checked_from_its_usage_and_a_responses_run_from_its_timings() -> None:
    """llama-server answers /v1/messages with no timings, but its input_tokens are the tokens it computed and
    cache_read_input_tokens those it reused; a Responses stream's last event carries timings as chat's does."""
    messages = [
        {"t": 1.0, "route": "POST /v1/messages", "status": 200, "usage": {"input_tokens": 700, "output_tokens": 5}},
        {
            "t": 2.0,
            "route": "POST /v1/messages",
            "status": 200,
            "usage": {"input_tokens": 90, "cache_read_input_tokens": 700, "output_tokens": 7},
        },
    ]
    numbers = trace_numbers(proxy_events(messages, 4096, "done"))
    assert (numbers.prompt_tokens_reprocessed, numbers.cache_tokens, numbers.prompt_tokens) == (790, 700, 1490)
    assert numbers.completion_tokens == 12 and numbers.flint_prompt_s is None  # its times are not reported
    assert check_reprocessed(numbers, 0.0, 790.0).status == "ok"
    responses = exchange(40, 0) | {"route": "POST /v1/responses", "usage": {"input_tokens": 40, "output_tokens": 3}}
    answered = trace_numbers(proxy_events([responses], 4096, "done"))
    assert (answered.prompt_tokens_reprocessed, answered.prompt_tokens, answered.completion_tokens) == (40, 40, 3)


def test_an_agent_ending_on_a_context_400_is_context_exhausted_and_the_proxys_limit_is_step_limit() -> None:
    """mini-swe-agent's real run at ctx 8192: its third prompt (27,061 tokens) refused, then it exited with an error."""
    answered = {"route": "POST /v1/chat/completions", "status": 200, "timings": {"prompt_n": 9, "cache_n": 0}}
    overflow = {"route": "POST /v1/chat/completions", "status": 400}
    overflow["error"] = {"type": "exceed_context_size_error", "n_prompt_tokens": 27061, "n_ctx": 8192}
    assert stop_reason([answered, overflow], "step_limit") == "context_exhausted"
    assert stop_reason([answered, overflow], "interrupted") == "interrupted"  # killed at the time limit: that first
    assert stop_reason([overflow, answered], "step_limit") == "step_limit"  # it went on past the 400
    limited = [answered, {"stopped": "step_limit", "max_steps": 1}]
    assert stop_reason(limited, "interrupted") == "step_limit"


def test_an_agent_ending_while_its_last_request_got_no_answer_is_server_error() -> None:
    """Qwen Code's real run at ctx 32768: its first prompt's answer still streaming at the proxy's answer limit, which
    cut it; it exited with an error. Not its step limit: no step was answered."""
    answered = {"route": "POST /v1/chat/completions", "status": 200, "timings": {"prompt_n": 9, "cache_n": 0}}
    cut = {"route": "POST /v1/chat/completions", "status": 200, "streamed": True, "answer_cut": "timeout"}
    assert stop_reason([cut], "step_limit") == "server_error"
    assert stop_reason([answered, {"route": "POST /v1/chat/completions", "in_flight": True}], "step_limit") == (
        "server_error"
    )
    assert stop_reason([cut, answered], "step_limit") == "step_limit"  # it went on past the cut answer
    assert stop_reason([cut], "interrupted") == "interrupted" and stop_reason([cut], "done") == "done"
    told = cut | {"route": "POST /v1/messages", "usage": {"input_tokens": 12248}}  # the prompt's cost came
    assert stop_reason([told], "step_limit") == "step_limit"
    assert stop_reason([cut, {"stopped": "step_limit", "max_steps": 1}], "step_limit") == "step_limit"
