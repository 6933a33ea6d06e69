"""What an agent's requests were like (bench/measure/request_figures.py, request_threads.py): streamed or not, the
first prompt's size, and the requests of each thread, from the proxy's log; the article's trace gives the first prompt
only, and the rest stays empty (not measured), never 0."""

from __future__ import annotations

from typing import Any

from bench.measure.proxy_log import proxy_events
from bench.measure.request_figures import request_figures
from bench.measure.request_threads import system_prompt, threads

CHAT, MESSAGES = "POST /v1/chat/completions", "POST /v1/messages"
TOOLS = [{"type": "function", "function": {"name": "bash"}}, {"type": "function", "function": {"name": "edit"}}]


def asked(body: dict[str, Any], prompt: int, streamed: bool = True, route: str = CHAT) -> dict[str, Any]:
    timings = {"cache_n": 0, "prompt_n": prompt, "prompt_ms": 1.0, "predicted_ms": 1.0}
    return {"route": route, "status": 200, "request": body, "timings": timings, "streamed": streamed}


def chat(system: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "go"}]}
    return body | ({"tools": tools} if tools else {})


def test_main_side_and_subagent_requests_are_told_apart() -> None:
    main, title = chat("You are an agent.", TOOLS), chat("Write a 5-word title.")
    explorer = chat("You explore.", TOOLS[:1])
    log = [
        asked(title, 40, streamed=False),
        asked(main, 7000),
        asked(explorer, 900),
        asked(main, 300),
        asked(main, 200),
    ]
    figures = request_figures(proxy_events(log, 8192, "done"))
    assert figures.requests == {"main": 3, "side": 1, "subagent": 1}
    assert figures.first_prompt_tokens == 7000  # the main thread's, not the title's that came first
    assert figures.streamed == "4 of 5"


def test_a_sub_agent_that_asks_more_often_than_the_main_thread_is_still_a_sub_agent() -> None:
    """As Claude Code's did here: its main thread asked twice, its sub-agent 26 times on one call."""
    main, explorer = chat("You are an agent.", TOOLS), chat("You explore.", TOOLS[:1])
    log = [asked(main, 12248), asked(main, 1), *[asked(explorer, 8315 if i == 0 else 20) for i in range(5)]]
    figures = request_figures(proxy_events(log, 16384, "done"))
    assert figures.requests == {"main": 2, "side": 0, "subagent": 5}
    assert figures.first_prompt_tokens == 12248


def test_an_agent_without_tools_keeps_its_system_prompt_and_that_is_its_main_thread() -> None:
    coder, commit = chat("Act as an expert software developer."), chat("Write a one-line commit message.")
    roles = [role for role, _ in threads([coder, coder, commit, coder])]
    assert roles == ["main", "main", "side", "main"]


def test_the_dialects_keep_their_instructions_in_their_own_places() -> None:
    blocks = {"system": [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be brief."}]}
    assert system_prompt(blocks) == "You are Claude Code.\nBe brief."
    assert system_prompt({"instructions": "You are Codex.", "input": []}) == "You are Codex."
    assert system_prompt({"messages": [{"role": "developer", "content": [{"type": "text", "text": "Dev."}]}]}) == "Dev."


def test_a_first_prompt_that_did_not_fit_is_its_400s_count_and_none_streamed_is_no() -> None:
    refused = {"route": MESSAGES, "status": 400, "request": chat("x", TOOLS)}
    refused["error"] = {"type": "exceed_context_size_error", "n_prompt_tokens": 21000, "n_ctx": 4096}
    figures = request_figures(proxy_events([refused, asked(chat("x", TOOLS), 90, streamed=False)], 4096, "done"))
    assert (figures.first_prompt_tokens, figures.streamed) == (21000, "no")


def test_the_articles_trace_gives_its_first_prompt_and_leaves_the_rest_unmeasured() -> None:
    events = [
        {"t": 0.0, "event": "start"},
        {"t": 1.0, "event": "response", "request": 0, "timings": {"cache_n": 0, "prompt_n": 680}},
        {"t": 2.0, "event": "response", "request": 1, "timings": {"cache_n": 680, "prompt_n": 50}},
    ]
    figures = request_figures(events)
    assert (figures.first_prompt_tokens, figures.streamed, figures.requests) == (680, None, None)
