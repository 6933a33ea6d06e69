"""The JSON-lines event trace (docs/internals.md, "The event trace").

One object per line, flushed at once, so a killed agent leaves every event up to the kill. Each line carries `t`
(seconds since the agent started) and `event`. The caller makes sure the last line is `stop`.

Nothing a model or a server does can make the trace too big for the bench to read (bench/sandbox/trace_file.py
reads at most 64 MiB): every field is bounded (agent/event_bounds.py; the changed ones are named in `trimmed`), a
line that is still longer than MAX_LINE_BYTES keeps only its `t`, `event`, `step` and the names of its fields, and
once the file holds TRACE_BUDGET_BYTES further events are left out and counted in the `stop` line
(`events_dropped`), which is always written.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from agent.event_bounds import bound_fields

Event = dict[str, Any]
MAX_LINE_BYTES = 65_536
TRACE_BUDGET_BYTES = 60 * 1024 * 1024  # the bench's cap is 64 MiB; this leaves room for the stop line


class Trace:
    """Writes events to a file (when given) and hands each one to `echo` (the console)."""

    def __init__(self, path: Path | None = None, echo: Callable[[Event], None] | None = None) -> None:
        self.started = time.monotonic()
        self.echo = echo
        self.file: IO[str] | None = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115
        self.stopped = False
        self.written = 0  # bytes
        self.dropped = 0  # events left out past the budget

    def emit(self, event: str, **fields: Any) -> Event:
        if event == "stop" and self.dropped:
            fields["events_dropped"] = self.dropped
        bounded, trimmed = bound_fields(fields)
        record = {"t": round(time.monotonic() - self.started, 3), "event": event, **bounded}
        if trimmed:
            record["trimmed"] = trimmed
        line = json.dumps(record, allow_nan=False) + "\n"
        if len(line.encode()) > MAX_LINE_BYTES:
            record = {k: record[k] for k in ("t", "event", "step", "reason", "events_dropped") if k in record}
            record["trimmed"] = sorted(fields)  # the line was too long even bounded: only what says where it was
            line = json.dumps(record) + "\n"
        self.write(event, line)
        if self.echo is not None:
            self.echo(record)
        self.stopped = self.stopped or event == "stop"
        return record

    def write(self, event: str, line: str) -> None:
        if self.file is None:
            return
        size = len(line.encode())
        if event != "stop" and self.written + size > TRACE_BUDGET_BYTES:
            self.dropped += 1
            return
        self.file.write(line)
        self.file.flush()
        self.written += size

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def agent_version(package: Path = Path(__file__).parent) -> str:
    """A short hash of the agent's own source, so results can tell agent versions apart."""
    digest = hashlib.sha256()
    for source in sorted(package.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
