"""The agent loop: ask Flint, maybe clear, handle the answer (cut off? tool calls? none?), run the tools, repeat.

One step is one request to Flint that got an answer or a cut; a request refused for size and retried after
clearing belongs to the same step. The run ends by raising Stop, whose reason goes in the trace's last line.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from agent import prompts
from agent.actions import Actions, restored_note
from agent.clearing import ARTICLE, ROOM_ONLY, RequestEstimate, clear_old, conversation_chars
from agent.done import Snapshot, check_command_done, check_done
from agent.event_bounds import valid_text
from agent.jeff_first import JeffActor
from agent.presets import Preset
from agent.requests import RequestLog
from agent.server import ChatClient, ContextOverflow, Reply, RequestRejected, ServerError, UnparsedOutput
from agent.summary import FlintWriter, Summaries, Writer
from agent.trace import Trace

Message = dict[str, Any]


@dataclass(frozen=True)
class RunConfig:
    task: str
    preset: Preset
    n_ctx: int  # the window, from /props
    flint_url: str
    keep: int = 2
    clear_at: float = 0.5
    max_steps: int = 30
    sampling: dict[str, Any] = field(default_factory=dict)  # merged into every request to Flint
    command_timeout: float = 120.0
    test_command: str = ""  # another language's tests (--test-command): the done check runs it instead of pytest


class Stop(Exception):
    """The run is over; `reason` is one of the trace's stop reasons."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or reason)
        self.reason = reason
        self.message = message


class Agent:
    def __init__(
        self,
        config: RunConfig,
        *,
        flint: ChatClient,
        actions: Actions,
        snapshot: Snapshot,
        trace: Trace,
        requests: RequestLog | None = None,
        summary_writer: Writer | None = None,
        jeff_actor: JeffActor | None = None,
    ) -> None:
        self.config = config
        self.preset = config.preset
        self.flint = flint
        self.actions = actions
        self.snapshot = snapshot
        self.trace = trace
        self.requests = requests or RequestLog()  # each request's difference from the previous (agent/requests.py)
        self.request_fields: dict[str, Any] = {}  # the current request's, for the events of its answer
        self.step = 0
        self.estimate = RequestEstimate()  # part3+: the size of the next request, to clear before sending it
        self.done_outputs: list[int] = []  # positions of the done check's messages (part3+ clears older ones)
        self.messages: list[Message] = [
            {"role": "system", "content": prompts.SYSTEM_PROMPT},
            {"role": "user", "content": config.task},
        ]
        self.jeff_actor = jeff_actor  # jeff-first, jeff-gate: Jeff takes steps (agent/jeff_first.py)
        self.summaries: Summaries | None = None  # the summary presets' (agent/summary.py)
        if self.preset.summary_by is not None:
            writer = summary_writer or FlintWriter(self)
            self.summaries = Summaries(writer, drops_turns=self.preset.clears_first)

    def run(self) -> Stop:
        """Take steps until one of them ends the run."""
        try:
            while True:
                self.take_step()
        except Stop as stop:
            return stop

    def take_step(self) -> None:
        if self.step >= self.config.max_steps:
            raise Stop("step_limit", f"used all {self.config.max_steps} steps")
        self.step += 1
        if self.preset.clears_before_send:
            self.clear_before_send()
        if self.jeff_actor is not None and self.jeff_actor.takes(self):
            return
        try:
            reply = self.ask_flint()
        except UnparsedOutput as e:
            self.handle_cut("unparsed", e.message)
            return
        if not self.preset.clears_before_send:
            # The answer says how full the window is. Clear before acting on it, as the published clearing version
            # did: its runs cleared after the cut answer that they then took as done.
            self.maybe_clear(reply.usage)
        if reply.finish_reason == "length" and self.preset.drops_cut:
            self.estimate.measured(usage_count(reply.usage, "prompt_tokens"), self.messages)  # the answer is gone
            self.handle_cut("length", None)
        else:
            self.handle_answer(reply)

    # Asking Flint

    def ask_flint(self) -> Reply:
        """Flint's answer to the conversation so far; a request too big for the window is cleared and retried."""
        while True:
            try:
                body = self.request_body()
                self.request_fields = self.requests.sent(self.step, body)
                reply = self.flint.chat(body, on_error=self.report_http_error)
            except ContextOverflow as e:
                self.report_http_error(e)
                self.clear_for_overflow(e)
                continue
            except UnparsedOutput as e:
                self.report_http_error(e)
                raise
            except RequestRejected as e:
                self.report_http_error(e)
                raise Stop("server_error", f"llama-server at {self.config.flint_url} refused the request: {e}") from e
            except ServerError as e:  # transport failures, already reported attempt by attempt
                message = f"llama-server at {self.config.flint_url} gave no usable answer: {e}"
                raise Stop("server_error", message) from e
            self.report_response(reply)
            return reply

    def request_body(self) -> dict[str, Any]:
        return {"messages": self.messages, "tools": prompts.TOOL_SPECS, "stream": False, **self.config.sampling}

    def report_response(self, reply: Reply) -> None:
        message = reply.message
        self.trace.emit(
            "response",
            step=self.step,
            usage=reply.usage,
            timings=reply.timings,
            finish_reason=reply.finish_reason,
            tool_calls=len(message.get("tool_calls") or []),
            content_chars=len(message.get("content") or ""),
            reasoning_chars=len(message.get("reasoning_content") or ""),
            messages=len(self.messages),
            **self.request_fields,
        )

    def report_http_error(self, e: ServerError, attempt: int | None = None) -> None:
        extra = {"attempt": attempt} if attempt is not None else {}
        fields = {"step": self.step, "status": e.status, "type": e.type, "message": e.message, **e.extra, **extra}
        fields["messages"] = len(self.messages)  # what the refused request held, as for a response
        fields.update(self.request_fields)
        self.trace.emit("http_error", **fields)

    # Handling the answer

    def handle_cut(self, kind: str, server_message: str | None) -> None:
        """An answer that ran into the end of the window: part3 drops it; part2 cannot go on after an unparsed one."""
        self.trace.emit("cut", step=self.step, kind=kind, dropped=self.preset.drops_cut, message=server_message)
        if not self.preset.drops_cut:
            raise Stop("server_error", f"llama-server could not parse the model's answer: {server_message}")
        self.messages.append({"role": "user", "content": prompts.cut_off_note(self.config.n_ctx)})

    def handle_answer(self, reply: Reply) -> None:
        if reply.finish_reason == "length":  # part2 and clearing take a cut answer as it is
            self.trace.emit("cut", step=self.step, kind="length", dropped=False, message=None)
        calls = self.remember(reply.message)
        self.estimate.measured(usage_count(reply.usage, "total_tokens"), self.messages)
        if calls:
            for call, raw in calls:
                text = self.actions.run(self.step, call["function"]["name"], raw)
                self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
        else:
            self.check_done()

    def remember(self, message: Message) -> list[tuple[Message, object]]:
        """Append the answer to the conversation; returns its tool calls with their raw arguments."""
        calls = [self.clean_call(call, i) for i, call in enumerate(message.get("tool_calls") or [])]
        stored: Message = {"role": "assistant", "content": valid_text(message.get("content") or "")}
        if message.get("reasoning_content"):
            stored["reasoning_content"] = valid_text(message["reasoning_content"])
        if calls:
            stored["tool_calls"] = [call for call, _ in calls]
        self.messages.append(stored)
        return calls

    def clean_call(self, call: object, index: int) -> tuple[Message, object]:
        """A tool call fit to send back: an id, and arguments that are a JSON object (the server rejects others)."""
        entry: dict[str, Any] = call if isinstance(call, dict) else {}
        function: dict[str, Any] = entry["function"] if isinstance(entry.get("function"), dict) else {}
        raw = function.get("arguments")
        clean = {
            "id": str(entry.get("id") or f"call_{self.step}_{index}"),
            "type": "function",
            "function": {"name": str(function.get("name") or ""), "arguments": _json_object_text(raw)},
        }
        return clean, raw

    def check_done(self) -> None:
        started = time.monotonic()
        self.actions.workspace.end_leftovers()  # nothing a command started may run during the check
        if self.config.test_command:
            result = check_command_done(
                self.actions.workspace.root, self.config.test_command, self.config.command_timeout
            )
        else:
            result = check_done(
                self.actions.workspace.root,
                self.snapshot,
                strict=self.preset.strict_done,
                trust_planted=self.preset.trusts_planted,
                timeout=self.config.command_timeout,
            )
        # The tests changed while pytest ran: the check proves nothing.
        restored = self.actions.restore_tests(self.step, "done_check")
        passed = result.passed and not restored
        self.trace.emit(
            "done_check",
            step=self.step,
            passed=passed,
            pytest_exit=result.pytest_exit,
            summary=result.summary,
            missing=result.missing,
            planted=result.planted,
            new_tests=result.new_tests,
            seconds=round(time.monotonic() - started, 3),  # the check's pytest and the restore: part of tools_s
        )
        if passed:
            raise Stop("done", result.summary)
        feedback = (result.feedback or prompts.tests_failed(result.summary)) + restored_note(restored)
        self.messages.append({"role": "user", "content": feedback})
        self.done_outputs.append(len(self.messages) - 1)

    # Clearing

    def maybe_clear(self, usage: object) -> None:
        """The article's clearing: after an answer that left the window past --clear-at."""
        total = usage_count(usage, "total_tokens")
        if not self.preset.clears or total is None:
            return
        if total > self.config.clear_at * self.config.n_ctx:
            before = conversation_chars(self.messages)
            changed = clear_old(self.messages, self.config.keep)
            self.report_clear("threshold", total, changed, before)

    def clear_before_send(self) -> None:
        """part3+: clear when the request about to go out is estimated past --clear-at (agent/clearing.py); the
        summary presets summarize instead, hybrid only when clearing was not enough (agent/summary.py)."""
        estimate = self.estimate.tokens_for(self.messages)
        if not self.past_threshold(estimate):
            return
        if self.summaries is None or self.preset.clears_first:
            before = conversation_chars(self.messages)
            self.report_clear("before_send", estimate, self.clear(), before)
            estimate = self.estimate.tokens_for(self.messages)
        if self.summaries is not None and self.past_threshold(estimate):
            self.summaries.summarize(self, estimate)

    def past_threshold(self, estimate: int | None) -> bool:
        return estimate is not None and estimate > self.config.clear_at * self.config.n_ctx

    def clear_for_overflow(self, e: ContextOverflow) -> None:
        """After a 400 for size: clear and let the caller retry, or stop when that cannot help."""
        too_big = f"the request ({e.extra.get('n_prompt_tokens', '?')} tokens) does not fit the window"
        if not self.preset.clears:
            raise Stop("context_exhausted", too_big)
        before = conversation_chars(self.messages)
        changed = self.clear()
        self.report_clear("context_400", None, changed, before)
        if changed == 0:
            raise Stop("context_exhausted", f"{too_big}, and nothing is left to clear")

    def report_clear(self, reason: str, total: int | None, changed: int, chars_before: int) -> None:
        freed = chars_before - conversation_chars(self.messages)  # what the clearing took out, against what it costs
        self.trace.emit("clear", step=self.step, reason=reason, total_tokens=total, changed=changed, freed_chars=freed)

    def clear(self) -> int:
        done_outputs = self.done_outputs if self.preset.clears_before_send else []
        how = ROOM_ONLY if self.preset.room_only else ARTICLE
        return clear_old(self.messages, self.config.keep, done_outputs, how)


def usage_count(usage: object, key: str) -> int | None:
    """A token count from the server's `usage`, or None when usage is no object or the value is no count (a
    hostile or broken server may send text, true, NaN, 1e308 or a negative number)."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or not 0 <= value <= MAX_TOKEN_COUNT:
        return None
    return int(value)


MAX_TOKEN_COUNT = 10**9  # no window is larger


def _json_object_text(raw: object) -> str:
    if isinstance(raw, dict):
        return json.dumps(raw)
    if isinstance(raw, str):
        try:
            if isinstance(json.loads(raw), dict):
                return raw  # unchanged, so the prompt stays byte-identical and the server's cache still matches
        except (ValueError, RecursionError):
            pass
    return "{}"
