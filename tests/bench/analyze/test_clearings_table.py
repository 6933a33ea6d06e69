"""The report's clearings table (bench/analyze/clearings.py): each clearing or summary that changed the conversation,
what it freed, and what the next request computed again because of it."""

from __future__ import annotations

from bench.analyze.clearings import changes


def test_each_change_is_paired_with_the_next_request_to_flint() -> None:
    events = [
        {"event": "response", "step": 1, "request": 0},
        {"event": "clear", "step": 2, "reason": "before_send", "changed": 0, "freed_chars": 0},  # nothing to show
        {"event": "response", "step": 2, "request": 1},
        {"event": "clear", "step": 3, "reason": "before_send", "changed": 2, "freed_chars": 3000},
        {"event": "summary", "step": 3, "by": "flint", "applied": True, "freed_chars": 1200, "request": 2},
        {"event": "response", "step": 3, "request": 3},
        {"event": "clear", "step": 4, "reason": "threshold", "changed": 1},  # an older trace: freed not said
        {"event": "response", "step": 5, "request": 4},
    ]
    split = [
        {"request": 1, "new": 40},
        {"request": 2, "new": 30, "summary": 12},
        {"request": 3, "clearing": 0, "summary": 700, "new": 20},
        {"request": 4, "clearing": 90},
    ]
    assert changes(events, split) == [
        ["3", "clearing (before_send)", "3,000 (≈1,000 tokens)", "700"],
        ["3", "summary (flint)", "1,200 (≈400 tokens)", "700"],
        ["4", "clearing (threshold)", "n/a", "90"],
    ]
    assert changes(events, None)[0][-1] == "n/a"  # no split: what was computed again is not known
