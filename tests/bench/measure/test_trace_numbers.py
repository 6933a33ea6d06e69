from bench.measure.trace_numbers import reprocessed_mismatch, trace_metrics


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
    {"t": 0, "event": "start", "n_ctx": 4096},
    response(1, 1000, 0, 100, 500.0, 1000.0),
    {"t": 2, "event": "jeff", "step": 1, "timings": {"prompt_ms": 50.0, "predicted_ms": 150.0}},
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
    },  # fmt: skip
    response(2, 1800, 600, 50, 800.0, 200.0),
    {"t": 5, "event": "cut", "step": 3, "kind": "length", "dropped": True},
    {"t": 6, "event": "stop", "reason": "done", "steps": 3},
]


def test_sums_come_from_the_servers_numbers() -> None:
    m = trace_metrics(TRACE, wall_s=10.0)
    assert m["prompt_tokens"] == "2800"
    assert m["prompt_tokens_reprocessed"] == "2200"  # 1000 + 1200
    assert m["cache_tokens"] == "600"
    assert m["completion_tokens"] == "150"
    assert m["max_request_tokens"] == "5000"  # the refused request was the largest
    assert m["model_s"] == "2.70"  # Flint 2.5 s + Jeff 0.2 s
    assert m["harness_s"] == "7.30"
    assert m["clearings"] == "1"  # a clearing that changed nothing is not counted
    assert m["cut_answers"] == "1" and m["context_400s"] == "1" and m["jeff_requests"] == "1"
    assert (m["stop_reason"], m["steps"], m["claimed_done"]) == ("done", "3", "true")


def test_a_trace_without_responses_leaves_token_columns_unmeasured() -> None:
    m = trace_metrics([{"t": 0, "event": "start"}], wall_s=1.0)
    assert m["prompt_tokens_reprocessed"] == "" and m["cache_tokens"] == "" and m["max_request_tokens"] == ""
    assert m["stop_reason"] == "" and m["claimed_done"] == ""


def test_cross_check_against_metrics_counter() -> None:
    assert reprocessed_mismatch(TRACE, "2200", 2200.0) is None
    assert "trace sum 2200 != /metrics delta 2300" in (reprocessed_mismatch(TRACE, "2200", 2300.0) or "")
    unparsed = TRACE + [{"t": 7, "event": "cut", "kind": "unparsed"}]
    assert "HTTP 500" in (reprocessed_mismatch(unparsed, "2200", 2900.0) or "")
    assert "not read" in (reprocessed_mismatch(TRACE, "2200", None) or "")
