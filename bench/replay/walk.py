"""Replaying a run under another clearing policy: what each request would have cost the server's prompt cache.

From a run's folder (its trace and the agent's request log) the replay rebuilds the conversation as it grew: each
step's new messages as first sent, the model's answers, their sizes. It then walks the steps again under a policy
(bench/replay/policies.py), clearing where that policy clears, and counts each prompt with Flint's own
tokenizer. The cache is llama-server's: the longest common prefix of the new prompt and the previous prompt with
its answer. How much of an answer as sent back matches the tokens the model generated is taken from the run
(its next request's cache_n), or, where the run never showed it, the run's median.

What it cannot know, and says in its output: the model would have answered otherwise to another conversation, so
every step's answer, its length and every tool result are the run's own; an answer that would no longer have fit
after its prompt is counted (the server would have cut it there); a prompt that does not fit is cleared and
retried as the agent does, and one that still does not fit ends the replay there (the run would have stopped);
messages the run cleared before ever sending them (keep 1) are known only cleared; server-side cache loss is
assumed away.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agents.article import RequestEstimate, common_prefix
from bench.errors import ResultsError
from bench.measure.reprocessing import Tokenizer
from bench.measure.request_log import load_request_log
from bench.measure.trace import Event, int_field, run_events
from bench.replay.policies import Message, Policy, summary_question

CANNOT_KNOW = (
    "The replay keeps the run's answers: under another policy the model would have seen another conversation and "
    "answered otherwise (other lengths, other tool calls, other cuts), so these are the cache's costs for the same "
    "answers, not another run. Server-side cache loss is assumed away; a request that does not fit after clearing "
    "ends the replay of that run."
)


@dataclass(frozen=True)
class Step:
    """One answered request of the run."""

    added: list[Message]  # messages appended since the previous answered request, as first sent
    completion_tokens: int
    dropped: bool  # a cut answer the agent dropped: its estimate then counted the prompt only
    answer: Message | None  # the answer as the agent sent it back (None when dropped or the run ended)
    prompt_tokens: int | None  # measured: the whole prompt, and what the server computed anew
    prompt_n: int | None
    answer_reuse: int | None  # tokens of this answer the next request took from the cache, when the run showed it


@dataclass
class RunTimeline:
    name: str
    n_ctx: int
    preset: str
    keep: int
    clear_at: float
    rest: dict[str, Any]  # the request's fields besides messages (tools, sampling)
    steps: list[Step]
    done_outputs: set[int] = field(default_factory=set)  # positions of failed done checks' output


@dataclass
class Replayed:
    """One run under one policy."""

    policy: str
    run: str
    prompt_n: list[int] = field(default_factory=list)  # per step replayed
    measured: list[int | None] = field(default_factory=list)  # the run's own prompt_n for the same steps
    clearings: int = 0
    ended_at: int | None = None  # the step that did not fit, when the replay ended early
    no_room: int = 0  # answers that would no longer have fit after their prompt: the server would have cut them

    @property
    def total(self) -> int:
        return sum(self.prompt_n)


def load_timeline(run_dir: Path) -> RunTimeline:
    """A run's conversation, step by step; ResultsError when the folder lacks what a replay needs."""
    events = run_events(run_dir)
    bodies = load_request_log(run_dir)
    start = next((e for e in events if e.get("event") == "start"), None)
    if not events or bodies is None or start is None:
        raise ResultsError(f"{run_dir}: no trace and request log (events.requests.jsonl) to replay")
    if not bodies.complete:
        raise ResultsError(f"{run_dir}: the agent's request log reached its size cap; the run cannot be replayed")
    if any(e.get("event") == "summary" for e in events):
        raise ResultsError(
            f"{run_dir}: a run that summarized cannot be replayed (its summary moved the messages after it); replay "
            "the runs it is compared with under summary:S instead"
        )
    answered = [e for e in events if e.get("event") == "response" and bodies.get(e.get("request")) is not None]
    if not answered:
        raise ResultsError(f"{run_dir}: no answered request to replay")
    originals: list[Message] = []  # each message as first sent
    for body in bodies.bodies:
        originals += copy.deepcopy(body["messages"][len(originals) :])
    dropped = {int_field(e.get("step")) for e in events if e.get("event") == "cut" and e.get("dropped")}
    steps, sent = [], 0
    for i, event in enumerate(answered):
        count = len(bodies.bodies[event["request"]]["messages"])
        following = bodies.bodies[answered[i + 1]["request"]]["messages"] if i + 1 < len(answered) else []
        answer = originals[count] if len(following) > count and originals[count].get("role") == "assistant" else None
        steps.append(
            _step(
                event=event,
                following=answered[i + 1] if i + 1 < len(answered) else None,
                added=originals[sent:count],
                dropped=int_field(event.get("step")) in dropped,
                answer=answer,
            )
        )
        sent = count
    done = {int_field(e.get("step")) for e in events if e.get("event") == "done_check" and not e.get("passed")}
    timeline = RunTimeline(
        name=run_dir.name,
        n_ctx=int(start.get("n_ctx") or 0),
        preset=str(start.get("preset")),
        keep=int(start.get("keep", 2)),
        clear_at=float(start.get("clear_at", 0.5)),
        rest={k: v for k, v in bodies.bodies[0].items() if k != "messages"},
        steps=steps,
    )
    timeline.done_outputs = _done_output_positions(answered, bodies.bodies, done)
    return timeline


def _step(event: Event, following: Event | None, added: list[Message], dropped: bool, answer: Message | None) -> Step:
    usage, timings = event.get("usage") or {}, event.get("timings") or {}
    prompt = int_field(usage.get("prompt_tokens"))
    reuse = None
    if following is not None and prompt is not None:
        cached = int_field((following.get("timings") or {}).get("cache_n"))
        if cached is not None and cached >= prompt:
            reuse = cached - prompt
    completion = int_field(usage.get("completion_tokens")) or 0
    return Step(
        added=added,
        completion_tokens=completion,
        dropped=dropped,
        answer=answer,
        prompt_tokens=prompt,
        prompt_n=int_field(timings.get("prompt_n")),
        answer_reuse=reuse,
    )


def _done_output_positions(answered: list[Event], bodies: list[dict[str, Any]], failed: set[int | None]) -> set[int]:
    """A failed done check's output is the last message the next request added."""
    positions = set()
    for i, event in enumerate(answered[:-1]):
        if int_field(event.get("step")) in failed:
            positions.add(len(bodies[answered[i + 1]["request"]]["messages"]) - 1)
    return positions


def replay(timeline: RunTimeline, policy: Policy, tokenizer: Tokenizer) -> Replayed:
    """The run's steps under `policy`: each request's prompt_n under a longest-common-prefix cache."""
    result = Replayed(policy.name, timeline.name)
    known = [s.answer_reuse for s in timeline.steps if s.answer_reuse is not None]
    typical = int(statistics.median(known)) if known else 0
    messages: list[Message] = []
    estimate = RequestEstimate()
    previous: tuple[list[int], int] | None = None  # the last prompt's tokens, and how much of its answer matches
    for number, step in enumerate(timeline.steps, start=1):
        messages += copy.deepcopy(step.added)
        outputs = sorted(p for p in timeline.done_outputs if p < len(messages))
        limit = policy.clear_at * timeline.n_ctx
        asked = 0  # summary:S: the tokens its question made the server compute
        if policy.moment == "before" and (size := estimate.tokens_for(messages)) is not None and size > limit:
            before = copy.deepcopy(messages)
            if policy.clear(messages, outputs, estimate, timeline.n_ctx) > 0:
                result.clearings += 1
                if policy.summary_tokens is not None:
                    asked, previous = _summary_question(timeline, policy, before, previous, tokenizer=tokenizer)
        tokens = _fitting(
            timeline=timeline,
            policy=policy,
            messages=messages,
            outputs=outputs,
            estimate=estimate,
            tokenizer=tokenizer,
            result=result,
        )
        if tokens is None:
            result.ended_at = number
            return result
        result.prompt_n.append(len(tokens) - _cached(previous, tokens) + asked)
        result.measured.append(step.prompt_n)
        result.no_room += len(tokens) + step.completion_tokens >= timeline.n_ctx and not _was_cut(
            step, tokens, timeline
        )
        reuse = step.answer_reuse if step.answer_reuse is not None else min(typical, step.completion_tokens)
        previous = (tokens, reuse)
        if policy.moment == "after" and len(tokens) + step.completion_tokens > limit:
            result.clearings += policy.clear(messages, outputs, estimate, timeline.n_ctx) > 0
        if step.dropped:
            estimate.measured(len(tokens), messages)
        elif step.answer is not None:
            estimate.measured(len(tokens) + step.completion_tokens, [*messages, step.answer])
    return result


def _summary_question(
    timeline: RunTimeline,
    policy: Policy,
    before: list[Message],
    previous: tuple[list[int], int] | None,
    tokenizer: Tokenizer,
) -> tuple[int, tuple[list[int], int]]:
    """The request that asks Flint for the summary, sent after the conversation as it stood: the tokens it computes,
    and the cache it leaves (its prompt; its answer is never sent back)."""
    question = tokenizer.prompt({**timeline.rest, "messages": [*before, summary_question(policy.keep)]})
    return len(question) - _cached(previous, question), (question, 0)


def _fitting(
    timeline: RunTimeline,
    policy: Policy,
    messages: list[Message],
    outputs: list[int],
    estimate: RequestEstimate,
    tokenizer: Tokenizer,
    result: Replayed,
) -> list[int] | None:
    """The request's tokens, cleared and counted again while it does not fit (as the agent does after a 400)."""
    while True:
        tokens = tokenizer.prompt({**timeline.rest, "messages": messages})
        if len(tokens) < timeline.n_ctx:
            return tokens
        if not policy.clears or policy.clear(messages, outputs, estimate, timeline.n_ctx) == 0:
            return None
        result.clearings += 1


def _was_cut(step: Step, tokens: list[int], timeline: RunTimeline) -> bool:
    """The run's own answer ran into the window's end at the same place (it was cut then too)."""
    return step.prompt_tokens is not None and step.prompt_tokens + step.completion_tokens >= timeline.n_ctx - 1


def _cached(previous: tuple[list[int], int] | None, tokens: list[int]) -> int:
    """What a longest-common-prefix cache reuses; at least one token is always computed."""
    if previous is None:
        return 0
    before, answer_match = previous
    shared = common_prefix(before, tokens)
    reused = shared if shared < len(before) else len(before) + answer_match
    return min(reused, len(tokens) - 1)
