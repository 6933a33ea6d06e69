"""Where every reprocessed token came from: each answered request's `timings.prompt_n` split into causes that add up
to it, from the request bodies the agent logged (bench/measure/request_log.py) and Flint's own tokenizer
(bench/llama/tokenizer.py).

llama-server keeps one slot's prompt and the answer it generated, and reuses the longest common prefix of that and
the next prompt (`cache_n`); the rest is computed anew (`prompt_n`). With both prompts as the server's tokens, the
prefix the server could reuse is a number: it ends where the two prompts first differ, or, when the new prompt starts
with the whole previous one, somewhere in the previous answer (how far its tokens as generated match the answer as
sent back). Each token the server computed anew lies in one region of the new prompt, which names its cause:

    cold         the first request: nothing was cached
    new          messages added since the previous request (tool results, notes) and the generation prompt
    answer       the previous answer as sent back, where it no longer matched the tokens the model generated: the
                 chat template's own rendering of it (re-serialized tool calls, reasoning it leaves out, end-of-turn
                 tokens), or the agent's (an empty object for arguments that were not one)
    clearing     material sent before, processed again because a clearing changed an earlier message (another
                 agent's: because it rewrote one, e.g. compacted or elided its history)
    summary      the same where a summary changed it (summary, summary-jeff, hybrid: agent/summary.py; a step that
                 cleared and summarized counts here), and the question of a summary Flint was asked to write
    template     material sent before and unchanged by the agent, processed again because the chat template rendered
                 it differently this time (e.g. dropping the reasoning of earlier turns)
    truncation   another agent's: material sent before, processed again because the agent dropped earlier messages
                 (bench/measure/proxy_split.py; the article's agent never drops one)
    side         another agent's: its side requests and sub-agents' first prompts, and the main thread's material
                 processed again after one of them took the server's slot (bench/measure/proxy_split.py)
    unexplained  tokens the server had and did not reuse: server-side loss (a sliding-window model without a
                 checkpoint, an evicted or erased cache)

A dropped cut answer is not sent again, so it costs no reprocessing here (its cost is the generation spent on it).
Where the old messages and the previous answer end in the new prompt is found by rendering the history up to there
followed by a marker message from the user (a user message, as templates that look ahead for the last one see it
in the real prompt too): the opening the marker shares with the real next message (one token, `<|im_start|>` in
ChatML) is counted with the part before it, so a boundary can be one token late; the sums are exact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench.agents.article import common_prefix
from bench.errors import BenchError
from bench.measure.request_log import Body, RequestBodies
from bench.measure.trace import Event, int_field

CAUSES = ("cold", "new", "answer", "clearing", "summary", "template", "unexplained", "truncation", "side")
# A user message that ends a rendering right after the previous answer: where it starts, the answer has ended.
_END_MARK: dict[str, Any] = {"role": "user", "content": "\u2063"}


class Tokenizer(Protocol):
    """A chat request's prompt as the server's tokens (bench/llama/tokenizer.py: ServerTokenizer)."""

    def prompt(
        self, body: Body, messages: Sequence[dict[str, Any]] | None = None, *, ends: bool = False
    ) -> list[int]: ...


@dataclass(frozen=True)
class RequestSplit:
    """One answered request: the server's figures and the split of prompt_n into causes."""

    step: int
    request: int
    prompt_tokens: int  # cache_n + prompt_n, the server's own count
    counted: int  # the same prompt counted with /apply-template and /tokenize
    cache_n: int
    split: dict[str, int]


@dataclass
class Attribution:
    """A run's split: per request, and its sums; status ok, mismatch (a prompt counted otherwise than the server
    counted it, so the split is approximate), partial (some requests could not be split) or unavailable."""

    status: str
    note: str | None = None
    requests: list[RequestSplit] = field(default_factory=list)

    def totals(self) -> dict[str, int] | None:
        """Tokens per cause over the run; None unless every answered request was split."""
        if self.status not in ("ok", "mismatch"):
            return None
        return {cause: sum(r.split[cause] for r in self.requests) for cause in CAUSES}

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "note": self.note,
            "requests": [
                {
                    "step": r.step,
                    "request": r.request,
                    "prompt_tokens": r.prompt_tokens,
                    "counted": r.counted,
                    "cache_n": r.cache_n,
                    **r.split,
                }
                for r in self.requests
            ],
        }


REFUSED_FOR_SIZE = "exceed_context_size_error"  # how the agent's trace names a 400 for a prompt over the window


def _refused_for_size(event: Event) -> bool:
    """A summary's question refused as too big for the window: as with a step's 400, the server read nothing of it."""
    return event.get("event") == "summary" and str(event.get("error") or "").startswith(REFUSED_FOR_SIZE)


def unavailable(note: str) -> Attribution:
    return Attribution("unavailable", note)


Splitter = Callable[[list[Event], RequestBodies, Tokenizer], Attribution]


def split_or_unavailable(
    split: Splitter, events: list[Event], bodies: RequestBodies, tokenizer: Tokenizer
) -> Attribution:
    """`split`'s attribution of a trace, or `unavailable` with the reason it could not be made (a request log that
    does not match the trace, a tokenizer that did not answer)."""
    try:
        return split(events, bodies, tokenizer)
    except BenchError as e:
        return unavailable(f"reprocessing not split: {e}")


def attribute(events: list[Event], bodies: RequestBodies | None, tokenizer: Tokenizer) -> Attribution:
    """The split for a run's trace; `unavailable` with the reason when the bodies or the tokenizer are missing."""
    if bodies is None:  # an agent that keeps no request log (a scripted or older one): not measured, not an error
        return Attribution("no log")
    return split_or_unavailable(_attribute, events, bodies, tokenizer)


def _attribute(events: list[Event], bodies: RequestBodies, tokenizer: Tokenizer) -> Attribution:
    result = Attribution("ok")
    previous: tuple[Body, list[int]] | None = None  # what the server's slot last processed
    missing = 0
    changed_by = "clearing"  # what changed the history since the previous request: a clearing, or a summary
    for event in events:
        body = bodies.get(event.get("request"))
        if event.get("event") == "summary" and event.get("applied"):
            changed_by = "summary"
        if _refused_for_size(event):
            continue  # the server read nothing of it: its slot is as it was
        if event.get("event") == "response" or (event.get("event") == "summary" and "request" in event):
            timings = event["timings"] if isinstance(event.get("timings"), dict) else {}
            cache_n, prompt_n = int_field(timings.get("cache_n")), int_field(timings.get("prompt_n"))
            if body is None or cache_n is None or prompt_n is None:
                missing += 1
                previous = None
                continue
            tokens = tokenizer.prompt(body)
            split = split_request(
                previous=previous,
                body=body,
                tokens=tokens,
                cache_n=cache_n,
                prompt_tokens=cache_n + prompt_n,
                tokenizer=tokenizer,
                changed_by=changed_by,
            )
            if event.get("event") == "summary":
                _charge_question(split, tokens, cache_n, body, tokenizer=tokenizer)
            else:
                changed_by = "clearing"
            step = int_field(event.get("step")) or 0
            result.requests.append(
                RequestSplit(
                    step=step,
                    request=event["request"],
                    prompt_tokens=cache_n + prompt_n,
                    counted=len(tokens),
                    cache_n=cache_n,
                    split=split,
                )
            )
            previous = (body, tokens)
        elif event.get("event") == "http_error" and event.get("status") == 500 and body is not None:
            previous = (body, tokenizer.prompt(body))  # a cut answer the server could not parse: it did process it
    mismatched = sum(r.counted != r.prompt_tokens for r in result.requests)
    if missing:
        result.status = "partial"
        complete = "" if bodies.complete else " (the agent's request log reached its size cap)"
        result.note = f"{missing} answered request(s) could not be split{complete}"
    elif mismatched:
        result.status = "mismatch"
        result.note = (
            f"{mismatched} of {len(result.requests)} prompts counted otherwise with /apply-template and /tokenize "
            "than the server counted them: the reprocessing split is approximate"
        )
    return result


def _charge_question(split: dict[str, int], tokens: list[int], cache_n: int, body: Body, tokenizer: Tokenizer) -> None:
    """A summary Flint was asked for: the question at the end of its prompt is the summary's cost, not new material."""
    start = _end_of(tokens, tokenizer, body, [*body["messages"][:-1], _END_MARK])
    moved = min(split["new"], len(tokens) - max(cache_n, start))
    split["new"] -= max(0, moved)
    split["summary"] += max(0, moved)


def split_request(
    previous: tuple[Body, list[int]] | None,
    body: Body,
    tokens: list[int],
    cache_n: int,
    prompt_tokens: int,
    tokenizer: Tokenizer,
    changed_by: str = "clearing",
) -> dict[str, int]:
    """prompt_n (= prompt_tokens - cache_n) of one request, split by cause."""
    split = dict.fromkeys(CAUSES, 0)
    if previous is None:
        split["cold"] = prompt_tokens - cache_n
        return split
    before_body, before = previous
    sent, now = before_body["messages"], body["messages"]
    kept = len(sent)
    diverge = common_prefix(before, tokens)
    history_changed = now[:kept] != sent
    answer_sent = len(now) > kept and now[kept].get("role") == "assistant"
    # Where the old messages end in this prompt, and where the previous answer ends, as token positions.
    old_end = _end_of(tokens, tokenizer, body, [*now[:kept], _END_MARK]) if diverge < len(before) else diverge
    answer_end = _end_of(tokens, tokenizer, body, [*now[: kept + 1], _END_MARK]) if answer_sent else old_end
    return split_positions(
        cache_n=cache_n,
        n=prompt_tokens,
        diverge=diverge,
        previous_n=len(before),
        old_end=old_end,
        answer_end=max(old_end, answer_end),
        history_changed=history_changed,
        changed_by=changed_by,
    )


def _end_of(tokens: Sequence[int], tokenizer: Tokenizer, body: Body, messages: list[dict[str, Any]]) -> int:
    """How far `tokens` (this request's prompt) agrees with `messages` rendered as history."""
    return common_prefix(tokens, tokenizer.prompt(body, messages, ends=True))


def split_positions(
    cache_n: int,
    n: int,
    diverge: int,
    previous_n: int,
    old_end: int,
    answer_end: int,
    history_changed: bool,
    changed_by: str = "clearing",
) -> dict[str, int]:
    """Classify the positions the server computed anew, [cache_n, n), by the region of the prompt they lie in.

    The server could have reused up to `diverge` when the prompts differ inside the previous one, else at least the
    whole previous prompt (and possibly part of the answer after it); never the whole prompt (one token is always
    computed). Regions: old messages [.., old_end), the previous answer [old_end, answer_end), new material after.
    What made the prompt differ before the answer: `changed_by` (a clearing or a summary) when the agent changed
    the history, else the template.
    """
    split = dict.fromkeys(CAUSES, 0)
    reusable = diverge if diverge < previous_n else previous_n
    end = n - 1 if reusable >= n else n  # the whole prompt was cached: its last token is computed anyway, as new
    split["new"] += n - end
    reusable = min(reusable, end)
    start = max(cache_n, reusable)
    split["unexplained"] = max(0, reusable - cache_n)
    earlier = changed_by if history_changed else "template"
    split[earlier] += _overlap(start, end, 0, old_end)
    answer_cause = earlier if diverge < old_end else "answer"
    split[answer_cause] += _overlap(start, end, old_end, answer_end)
    split["new"] += _overlap(start, end, answer_end, end)
    return split


def _overlap(start: int, end: int, low: int, high: int) -> int:
    return max(0, min(end, high) - max(start, low))
