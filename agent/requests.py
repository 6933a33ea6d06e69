"""The request log: what each request to Flint held, so that the bench can tell where every reprocessed token came
from (docs/internals.md, "The request log").

For every body sent to Flint (a retry of the same body after a transport failure is the same request), the loop asks
`sent()`, which answers with the fields the trace's `response` and `http_error` events carry: `request` (the body's
number in the log, from 0) and `changed_from` (the first message of the previous request that this one changed; None
when it kept them all and only appended). It also appends the body to a JSON-lines side file beside the trace,
`events.requests.jsonl` for `events.jsonl`, as a difference from the previous request, so that a 30-step run writes
about what its conversation holds, not 30 copies of it:

    {"request": 3, "step": 3, "from": 7, "messages": [...], "body": {...}}

The messages of request 3 are the first 7 messages of request 2 followed by `messages`; `body` (the fields besides
`messages`: tools, sampling) is written with the first request and again whenever it changes. Once the file would
pass MAX_BYTES, one last line {"request": N, "truncated": true} says so and nothing more is written; the trace goes
on as before.

The log only copies and compares: nothing here changes what is sent.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]
MAX_BYTES = 48 * 1024 * 1024  # the bench reads the file up to 64 MiB (bench/sandbox/trace_file.py)


def beside(trace: Path | None) -> Path | None:
    """The side file of a trace: events.jsonl -> events.requests.jsonl; None for no trace, or one that is not a
    file (/dev/null)."""
    if trace is None or (trace.exists() and not trace.is_file()):
        return None
    return trace.with_name(f"{trace.stem}.requests.jsonl")


class RequestLog:
    """Compares each request with the previous one and writes it, as a difference, to `path` (None: no file)."""

    def __init__(self, path: Path | None = None, max_bytes: int = MAX_BYTES) -> None:
        self.file: IO[str] | None = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115
        self.max_bytes = max_bytes
        self.written = 0
        self.count = 0
        self.previous: list[Message] = []
        self.previous_rest: dict[str, Any] | None = None

    def sent(self, step: int, body: dict[str, Any]) -> dict[str, Any]:
        """Record a body about to go out; returns the fields for the trace event of its answer."""
        messages: list[Message] = body.get("messages") or []
        kept = common_prefix(self.previous, messages)
        changed_from = None if kept == len(self.previous) else kept
        rest = {key: value for key, value in body.items() if key != "messages"}
        record: dict[str, Any] = {"request": self.count, "step": step, "from": kept, "messages": messages[kept:]}
        changed_rest = rest != self.previous_rest
        if changed_rest:
            record["body"] = rest
        self._write(record)
        # Copies of what was sent, for the next comparison: the loop clears old messages in place. Messages kept
        # unchanged are already copied; only the rest is copied now, so a step costs what it added, not the whole.
        self.previous = self.previous[:kept] + copy.deepcopy(messages[kept:])
        if changed_rest:
            self.previous_rest = copy.deepcopy(rest)
        fields = {"request": self.count, "changed_from": changed_from}
        self.count += 1
        return fields

    def _write(self, record: dict[str, Any]) -> None:
        if self.file is None:
            return
        line = json.dumps(record) + "\n"
        full = self.written + len(line) > self.max_bytes
        try:  # buffered, unlike the trace: a killed agent's run measures nothing anyway
            self.file.write(json.dumps({"request": record["request"], "truncated": True}) + "\n" if full else line)
        except OSError:  # a full disk: the log ends here (the trace keeps its room for its stop line)
            full = True
        if full:
            self.close()
            return
        self.written += len(line)

    def close(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):  # closed even when its last flush fails
                self.file.close()
            self.file = None


def common_prefix(before: Sequence[object], now: Sequence[object]) -> int:
    """How many leading items two sequences share: messages here, tokens for the bench's prompt-cache model."""
    n = 0
    for old, new in zip(before, now, strict=False):
        if old != new:
            break
        n += 1
    return n
