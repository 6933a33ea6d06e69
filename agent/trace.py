"""The JSON-lines event trace (docs/internals.md, "The event trace").

One object per line, flushed at once, so a killed agent leaves every event up to the kill. Each line carries `t`
(seconds since the agent started) and `event`. The caller makes sure the last line is `stop`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

Event = dict[str, Any]


class Trace:
    """Writes events to a file (when given) and hands each one to `echo` (the console)."""

    def __init__(self, path: Path | None = None, echo: Callable[[Event], None] | None = None) -> None:
        self.started = time.monotonic()
        self.echo = echo
        self.file: IO[str] | None = open(path, "w", encoding="utf-8") if path else None  # noqa: SIM115
        self.stopped = False

    def emit(self, event: str, **fields: Any) -> Event:
        record = {"t": round(time.monotonic() - self.started, 3), "event": event, **fields}
        if self.file is not None:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()
        if self.echo is not None:
            self.echo(record)
        self.stopped = self.stopped or event == "stop"
        return record

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
