"""The request columns (bench/measure/request_figures.py) on proxy logs recorded from real agents here
(tests/bench/measure/data/proxy_logs/README.md): what each agent's requests were like, as the row gives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.measure.proxy_log import proxy_events, read_exchanges
from bench.measure.request_figures import RequestFigures, request_figures
from bench.measure.trace_numbers import trace_numbers

LOGS = Path(__file__).parent / "data" / "proxy_logs"


def figures_of(name: str, ctx: int) -> RequestFigures:
    return request_figures(proxy_events(read_exchanges((LOGS / name).read_text()), ctx, "step_limit"))


def test_opencode_at_2048_asks_for_a_title_and_compactions_while_its_main_prompt_never_fits() -> None:
    figures = figures_of("opencode-2048.jsonl", 2048)
    # its first request is the title (833 tokens); the first main one was refused at 7,189 tokens: that is its size
    assert figures.first_prompt_tokens == 7189 and figures.streamed == "yes"
    assert figures.requests == {"main": 7, "side": 8, "subagent": 0}
    numbers = trace_numbers(proxy_events(read_exchanges((LOGS / "opencode-2048.jsonl").read_text()), 2048, "done"))
    assert numbers.context_400s == 7


@pytest.mark.parametrize(
    ("name", "ctx", "expected"),
    [
        ("mini-swe-agent-2048.jsonl", 2048, RequestFigures("no", 1124, {"main": 2, "side": 0, "subagent": 0})),
        ("aider-4096.jsonl", 4096, RequestFigures("yes", 1083, {"main": 1, "side": 0, "subagent": 0})),
    ],
)
def test_mini_swe_agent_and_aider_ask_from_one_thread(name: str, ctx: int, expected: RequestFigures) -> None:
    assert figures_of(name, ctx) == expected
