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

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.event_bounds import bound_fields

Event = dict[str, Any]
MAX_LINE_BYTES = 65_536
TRACE_BUDGET_BYTES = 60 * 1024 * 1024  # the bench's cap is 64 MiB; this leaves room for the stop line
RESERVE_BYTES = 2 * MAX_LINE_BYTES  # kept allocated past the trace's end: after any event, room for a stop line
FALLOC_FL_KEEP_SIZE = 1


class Trace:
    """Writes events to a file (when given) and hands each one to `echo` (the console).

    The `stop` line is written even on a disk that fills up: room for it is kept allocated past the end of the file
    (Linux fallocate, FALLOC_FL_KEEP_SIZE; on a file system without it, only as long as the disk has room). Once
    that room cannot be renewed, further events are left out and counted in the `stop` line, and `error` says why.
    """

    def __init__(self, path: Path | None = None, echo: Callable[[Event], None] | None = None) -> None:
        self.started = time.monotonic()
        self.echo = echo
        self.path = path
        self.fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666) if path else None
        self.stopped = False
        self.written = 0  # bytes
        self.dropped = 0  # events left out past the budget, or once the disk was full
        self.error: str | None = None  # why events were left out of the file, for the person (one line)
        self.full = False  # the disk had no room for the next event's reserve: only `stop` is still written
        self._reserve()

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
        if self.fd is None:
            return
        data = line.encode()
        if event != "stop" and (self.full or self.written + len(data) > TRACE_BUDGET_BYTES):
            self.dropped += 1
            return
        try:
            _write_all(self.fd, data)
        except OSError as e:
            os.ftruncate(self.fd, self.written)  # no half line: the next one starts where this one did
            self._failed(e, "the stop line" if event == "stop" else "events")
            self.dropped += event != "stop"
            return
        self.written += len(data)
        if event != "stop" and not self._reserve():
            self.full = True

    def _reserve(self) -> bool:
        """Keep room for a stop line past the end of the file; False when the disk has none left."""
        if self.fd is None:
            return True
        try:
            fallocate = ctypes.CDLL(None, use_errno=True).fallocate
        except (OSError, AttributeError):
            return True  # no fallocate here: nothing can be kept
        size = ctypes.c_int64
        if fallocate(self.fd, FALLOC_FL_KEEP_SIZE, size(self.written), size(RESERVE_BYTES)) == 0:
            return True
        error = ctypes.get_errno()
        if error in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            self._failed(OSError(error, os.strerror(error)), "events")
            return False
        return True  # the file system cannot reserve (or the file is no file, e.g. /dev/null): nothing to keep

    def _failed(self, error: OSError, what: str) -> None:
        if self.error is None or what == "the stop line":
            reason = error.strerror or str(error)
            self.error = f"the event trace {self.path} could not take {what} ({reason}); events left out are counted"
            self.error += " in its stop line" if what == "events" else ", and the trace has no stop line"

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.written)  # gives back the room kept past the end
            os.close(self.fd)
            self.fd = None


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def agent_version(package: Path = Path(__file__).parent) -> str:
    """A short hash of the agent's own source, so results can tell agent versions apart."""
    digest = hashlib.sha256()
    for source in sorted(package.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:12]
