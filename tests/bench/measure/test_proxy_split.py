"""Another agent's reprocessed tokens split by cause (bench/measure/proxy_split.py): a run of requests played against
a server modelled in a few lines (one slot, a longest-common-prefix cache, one token per character of a plain
rendering), each cause forced once, and the split checked against it: the causes add up to prompt_n on every request,
and the forced one is where it shows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bench.agents.article import common_prefix
from bench.errors import PrerequisiteError
from bench.measure.proxy_log import proxy_events
from bench.measure.proxy_split import attribute_proxy, history_change, proxy_bodies
from bench.measure.reprocessing import CAUSES

CHAT = "POST /v1/chat/completions"
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
SYSTEM = {"role": "system", "content": "You are a coding agent. " * 8}
TASK = {"role": "user", "content": "Add sub() to calc.py and a test for it."}


class CharTokenizer:
    """A chat template in one line: the tools, then each message as <role>content</>; one token per character."""

    def prompt(self, body: dict[str, Any], messages: Sequence[dict[str, Any]] | None = None, *, ends: bool = False):
        chosen = body["messages"] if messages is None else messages
        text = json.dumps(body.get("tools", [])) + "".join(f"<{m['role']}>{m['content']}</>" for m in chosen)
        return [ord(char) for char in text + ("" if ends else "<assistant>")]


def answer(n: int) -> dict[str, str]:
    return {"role": "assistant", "content": f"I will run step {n}: " + "ls -la; " * 5}


def result(n: int) -> dict[str, str]:
    return {"role": "tool", "content": f"output {n}: " + "file.py " * 30}


def played(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The proxy's log of `bodies` sent in order to the modelled server: its timings as the server would count them."""
    tokenizer, slot, log = CharTokenizer(), [], []
    for number, body in enumerate(bodies):
        tokens = tokenizer.prompt(body)
        cache_n = min(common_prefix(slot, tokens), len(tokens) - 1)
        # the slot keeps the prompt and the answer as generated: the next request's copy of it, where it has one
        sent = body["messages"]
        following = [b["messages"] for b in bodies[number + 1 :] if b["messages"][: len(sent)] == sent][:1]
        slot = tokenizer.prompt(body, following[0][: len(sent) + 1], ends=True) if following else tokens
        timings = {"cache_n": cache_n, "prompt_n": len(tokens) - cache_n, "prompt_ms": 1.0, "predicted_ms": 1.0}
        log.append({"t": float(number), "route": CHAT, "status": 200, "request": body, "timings": timings})
    return log


def split_of(bodies: list[dict[str, Any]]) -> list[dict[str, int]]:
    log = played(bodies)
    attribution = attribute_proxy(proxy_events(log, 4096, "done"), proxy_bodies(log), CharTokenizer())
    assert attribution.status == "ok", attribution.note
    for split, entry in zip(attribution.requests, log, strict=True):
        assert sum(split.split.values()) == entry["timings"]["prompt_n"]  # the causes add up, request by request
        assert set(split.split) == set(CAUSES) and split.counted == split.prompt_tokens
    return [{cause: n for cause, n in r.split.items() if n} for r in attribution.requests]


def main(*messages: dict[str, str]) -> dict[str, Any]:
    return {"messages": [SYSTEM, TASK, *messages], "tools": TOOLS, "stream": True}


def test_growing_history_is_cold_then_new() -> None:
    splits = split_of([main(), main(answer(0), result(0)), main(answer(0), result(0), answer(1), result(1))])
    assert set(splits[0]) == {"cold"}
    assert set(splits[1]) <= {"new", "answer"} and set(splits[2]) <= {"new", "answer"}


def test_a_side_request_costs_its_own_prompt_and_what_the_main_thread_lost_to_it() -> None:
    title = {"messages": [{"role": "system", "content": "Write a title."}, TASK], "stream": False}
    splits = split_of([main(), title, main(answer(0), result(0))])
    assert set(splits[1]) == {"side"}
    # the main thread's old prompt and answer, no longer in the slot, are the side request's cost; the result is new
    assert splits[2]["side"] > len(SYSTEM["content"]) and splits[2]["new"] >= len(result(0)["content"])
    assert "unexplained" not in splits[2] and "cold" not in splits[2]


def test_dropped_messages_are_truncation_and_rewritten_ones_clearing() -> None:
    history = [answer(0), result(0), answer(1), result(1)]
    dropped = [answer(1), result(1), answer(2), result(2)]
    rewritten = [answer(1), {"role": "tool", "content": "[output elided]"}, answer(2), result(2), answer(3), result(3)]
    splits = split_of([main(*history), main(*dropped), main(*rewritten)])
    assert splits[1].get("truncation", 0) > len(result(1)["content"]) and "clearing" not in splits[1]
    assert splits[2].get("clearing", 0) > len(result(2)["content"]) and "truncation" not in splits[2]


def test_history_change_names_a_drop_and_a_rewrite() -> None:
    sent = [SYSTEM, TASK, answer(0), result(0), answer(1), result(1)]
    assert history_change(sent, [SYSTEM, TASK, answer(1), result(1), answer(2)]) == "truncation"
    assert history_change(sent, [SYSTEM, TASK, answer(0), result(9), answer(1), result(1)]) == "clearing"
    assert history_change(sent, [SYSTEM, TASK, answer(0), result(0)]) == "clearing"  # the newest ones gone: a reset


def test_another_dialect_is_not_split_and_says_why() -> None:
    log = [
        {
            "route": "POST /v1/messages",
            "status": 200,
            "request": {"messages": []},
            "timings": {"cache_n": 0, "prompt_n": 9},
        }
    ]
    attribution = attribute_proxy(proxy_events(log, 4096, "done"), proxy_bodies(log), CharTokenizer())
    assert attribution.status == "unavailable" and "/v1/messages" in (attribution.note or "")


class DeadTokenizer(CharTokenizer):
    """A tokenizer whose server went away mid-split."""

    def prompt(self, body: dict[str, Any], messages: Sequence[dict[str, Any]] | None = None, *, ends: bool = False):
        raise PrerequisiteError("Flint's /apply-template did not answer")


def test_a_tokenizer_that_fails_mid_split_leaves_it_unavailable_with_the_reason() -> None:
    log = played([{"messages": [SYSTEM, TASK], "tools": TOOLS}])
    attribution = attribute_proxy(proxy_events(log, 4096, "done"), proxy_bodies(log), DeadTokenizer())
    assert attribution.status == "unavailable"
    assert attribution.note == "reprocessing not split: Flint's /apply-template did not answer"
