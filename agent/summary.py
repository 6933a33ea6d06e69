"""Summarizing instead of clearing: presets summary, summary-jeff and hybrid (docs/agent.md, Presets).

All three act on part3+'s trigger, before a request estimated past the threshold, so that they compare with part3+
and late like for like.

- summary, summary-jeff: the material a clearing would replace (agent/clearing.py, room-only) is replaced as the
  clearing would, with a placeholder that points to the summary, and a summary of that material (Flint's or Jeff's)
  goes into one message right after the task; a later summary rewrites that message and takes the earlier one in.
- hybrid: clear first; only when the request is still past the threshold are the old turns, which clearing has
  thinned out, replaced by the summary: each assistant message before the newest `keep` tool results leaves the
  conversation together with its tool results, so no call loses its result.

The task, the newest `keep` tool results and the newest done-check output stay whole. Flint writes its summary
after the conversation as it stands (so the server reuses its cached prompt and computes only the question); Jeff,
who has not seen the conversation, reads the material itself, cut to his window.

Guard against looping: a summary that would not make the conversation smaller is not applied, and the same
material is never sent for a summary twice; with no new material past the last summary nothing is asked, nor while
even an empty summary would leave the conversation no smaller (its message outweighs what the placeholders free).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent import prompts
from agent.clearing import Clearing, clear_boundary_positions, clear_old, conversation_chars
from agent.server import ChatClient, Reply, ServerError

Message = dict[str, Any]
SUMMARY_AT = 2  # the summary's message: right after the system prompt and the task
CHARS_PER_TOKEN = 3  # as agent/clearing.py: an overestimate of the tokens, so Jeff's question fits his window
JEFF_ROOM = 200  # tokens of Jeff's window kept for his system prompt and the question's own words
SUMMARIZING = Clearing(room_only=True, tool_placeholder=prompts.summarized_tool_result)


@dataclass(frozen=True)
class Written:
    """A summary as a model wrote it (text None when none came), with the server's figures."""

    text: str | None
    seconds: float
    usage: Any = None
    timings: Any = None
    error: str | None = None
    request_fields: dict[str, Any] = field(default_factory=dict)  # Flint's: the request log's number


class Writer(Protocol):
    by: str  # flint | jeff

    def write(self, step: int, messages: list[Message], previous: str | None, material: str) -> Written: ...


@dataclass
class Proposal:
    """The conversation as a summary would leave it, before the summary text is in."""

    messages: list[Message]
    kept: list[int]  # for each of `messages`, its position in the conversation before
    material: str  # what the summary stands for, as text
    key: str  # the material's identity, for the loop guard


class Summaries:
    """A run's summaries: where the summary's message is, and which material was already sent to be summarized."""

    def __init__(self, writer: Writer, drops_turns: bool) -> None:
        self.writer = writer
        self.drops_turns = drops_turns  # hybrid: the old turns leave, after a clearing has thinned them
        self.at: int | None = None  # the summary's message, once there is one
        self.tried: set[str] = set()  # the loop guard: material already sent for a summary

    def summarize(self, agent: Any, estimate: int | None) -> bool:
        """Summarize the old material of `agent` (agent/loop.py's Agent) in place and report it in the trace; True
        when the conversation changed. Nothing is asked when there is no material, or only material already
        tried."""
        messages, keep = agent.messages, agent.config.keep
        if self.drops_turns:
            proposal = propose_dropping(messages, keep, self.at)
        else:
            proposal = propose_replacing(messages, keep, agent.done_outputs)
        if proposal is None or proposal.key in self.tried:
            return False
        self.tried.add(proposal.key)
        if not shrinks(messages, with_summary(proposal, self.at, "")):  # no summary could: ask for none
            return False
        written = self.writer.write(agent.step, messages, previous_summary(messages, self.at), proposal.material)
        applied, chars_before = False, conversation_chars(messages)
        if written.text:
            inserted = self.at is None
            after = with_summary(proposal, self.at, written.text)
            if shrinks(messages, after):
                agent.done_outputs[:] = moved(agent.done_outputs, proposal.kept, inserted)
                messages[:] = after
                self.at, applied = SUMMARY_AT, True
        agent.trace.emit(
            "summary",
            step=agent.step,
            by=self.writer.by,
            total_tokens=estimate,
            material_chars=len(proposal.material),
            summary_chars=len(written.text or ""),
            applied=applied,
            freed_chars=chars_before - conversation_chars(messages),  # 0 when not applied
            usage=written.usage,
            timings=written.timings,
            seconds=round(written.seconds, 3),
            error=written.error,
            **written.request_fields,
        )
        return applied


def moved(positions: list[int], kept: list[int], inserted: bool) -> list[int]:
    """Positions of kept messages after a summary: where they went, one further on when its message was inserted."""
    where = {old: new for new, old in enumerate(kept)}
    return [where[p] + (inserted and where[p] >= SUMMARY_AT) for p in positions if p in where]


def answer_text(reply: Reply) -> str:
    """The summary in an answer: its text; an answer that is a tool call (a model served forced to call tools)
    gives its calls as text, so that the harness's cost is measured even where the model cannot write prose."""
    text = reply.message.get("content")
    if isinstance(text, str) and text.strip():
        return text.strip()
    calls = [c.get("function") or {} for c in reply.message.get("tool_calls") or [] if isinstance(c, dict)]
    return "\n".join(f"{f.get('name')}({f.get('arguments')})" for f in calls if isinstance(f, dict)).strip()


class FlintWriter:
    """Flint writes the summary: the conversation as sent, then the question (its prompt cache covers the rest)."""

    by = "flint"

    def __init__(self, agent: Any) -> None:
        self.agent = agent  # agent/loop.py's Agent: its client, request log, sampling and error reporting

    def write(self, step: int, messages: list[Message], previous: str | None, material: str) -> Written:
        question = {"role": "user", "content": prompts.summary_request(prompts.SUMMARY_TOKENS, self.agent.config.keep)}
        body = {**self.agent.request_body(), "messages": [*messages, question], "max_tokens": prompts.SUMMARY_TOKENS}
        fields = self.agent.requests.sent(step, body)
        return ask(self.agent.flint, body, fields)


class JeffWriter:
    """Jeff writes the summary from the material itself, cut to what his window holds."""

    by = "jeff"

    def __init__(self, client: ChatClient, n_ctx: int) -> None:
        self.client = client
        self.n_ctx = n_ctx

    def write(self, step: int, messages: list[Message], previous: str | None, material: str) -> Written:
        room = max(0, (self.n_ctx - prompts.SUMMARY_TOKENS - JEFF_ROOM) * CHARS_PER_TOKEN - len(previous or ""))
        if len(material) > room:  # the newest part matters most to what comes next
            material = material[len(material) - room :]
        question = prompts.summary_material(prompts.SUMMARY_TOKENS, previous, material)
        body = {
            "messages": [
                {"role": "system", "content": prompts.SUMMARY_SYSTEM},
                {"role": "user", "content": question},
            ],
            "max_tokens": prompts.SUMMARY_TOKENS,
            "temperature": 0.0,
        }
        return ask(self.client, body, {})


def ask(client: ChatClient, body: dict[str, Any], fields: dict[str, Any]) -> Written:
    started = time.monotonic()
    try:
        reply = client.chat(body)
    except ServerError as e:
        return Written(None, time.monotonic() - started, error=f"{e.type}: {e.message}", request_fields=fields)
    text = answer_text(reply)
    return Written(
        text or None, time.monotonic() - started, reply.usage, reply.timings, error=None, request_fields=fields
    )


def previous_summary(messages: list[Message], summary_at: int | None) -> str | None:
    if summary_at is None:
        return None
    content = str(messages[summary_at].get("content") or "")
    return content.split("\n", 1)[1] if "\n" in content else content


def propose_replacing(messages: list[Message], keep: int, done_outputs: list[int]) -> Proposal | None:
    """summary, summary-jeff: what a room-only clearing would replace, with the summary's placeholder; None when a
    clearing would change nothing."""
    after = copy.deepcopy(messages)
    clear_old(after, keep, done_outputs, SUMMARIZING)
    changed = [i for i, (old, new) in enumerate(zip(messages, after, strict=True)) if old != new]
    if not changed:
        return None
    material = "\n\n".join(describe(messages, i) for i in changed)
    key = json.dumps([[i, describe(messages, i)] for i in changed])
    return Proposal(after, list(range(len(messages))), material, key)


def propose_dropping(messages: list[Message], keep: int, summary_at: int | None) -> Proposal | None:
    """hybrid: the old turns (each assistant message before the newest `keep` tool results, and its results) leave
    the conversation; None when there is no such turn."""
    start = 2 if summary_at is None else summary_at + 1
    old = [i for i in clear_boundary_positions(messages, keep) if i >= start]
    turns = whole_turns(messages, old)
    if not turns:
        return None
    material = "\n\n".join(describe(messages, i) for i in turns)
    kept = [i for i in range(len(messages)) if i not in set(turns)]
    return Proposal(copy.deepcopy([messages[i] for i in kept]), kept, material, json.dumps(["drop", material]))


def whole_turns(messages: list[Message], positions: list[int]) -> list[int]:
    """The positions among `positions` that leave together: an assistant message with calls and the tool results
    that follow it (the agent appends each call's result right after its message), only when all of them are
    among `positions`, so that no call is parted from its result."""
    chosen: list[int] = []
    for i in positions:
        if messages[i].get("role") != "assistant" or not messages[i].get("tool_calls"):
            continue
        end = i + 1
        while end < len(messages) and messages[end].get("role") == "tool":
            end += 1
        if end - 1 - i == len(messages[i]["tool_calls"]) and all(j in positions for j in range(i + 1, end)):
            chosen += range(i, end)
    return chosen


def describe(messages: list[Message], i: int) -> str:
    """One message of the material as the summarizer reads it."""
    message = messages[i]
    role = message.get("role")
    if role == "tool":
        return f"Result of {call_named(messages, message.get('tool_call_id'))}:\n{message.get('content') or ''}"
    if role == "assistant":
        calls = [c.get("function") or {} for c in message.get("tool_calls") or []]
        said = [str(message.get("content") or ""), str(message.get("reasoning_content") or "")]
        said += [f"called {f.get('name')}({f.get('arguments')})" for f in calls]
        return "The agent: " + " ".join(text for text in said if text)
    return f"Test output:\n{message.get('content') or ''}"


def call_named(messages: list[Message], call_id: object) -> str:
    for message in messages:
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                function = call.get("function") or {}
                return f"{function.get('name')}({function.get('arguments')})"
    return "a tool call"


def with_summary(proposal: Proposal, summary_at: int | None, text: str) -> list[Message]:
    """The proposal's conversation with the summary's message in (inserted after the task, or rewritten)."""
    messages = copy.copy(proposal.messages)
    message = {"role": "user", "content": prompts.summary_message(text)}
    if summary_at is None:
        messages.insert(SUMMARY_AT, message)
    else:
        messages[summary_at] = message
    return messages


def shrinks(before: list[Message], after: list[Message]) -> bool:
    return conversation_chars(after) < conversation_chars(before)
