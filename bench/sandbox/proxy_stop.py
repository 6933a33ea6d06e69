"""Whether the recording proxy has ended the run: its log's line `{"stopped": ...}` (docker/record_proxy.py's
StepLimit writes it once the run's step limit is reached and no request is left with the server). A sandbox asks
while it waits for the agent, and ends the agent's processes once it is there.

The log grows with every request body, so each look reads only what was added since the last one. The proxy writes
its own lines whole, and a request body in a line is JSON inside a string: no line but the proxy's own starts with
`{"stopped"`.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.measure.proxy_log import STOPPED

MARK = b'{"' + STOPPED.encode() + b'"'


class ProxyStopped:
    """`stopped()`: True once the proxy's log at `log` holds its stop line (and from then on)."""

    def __init__(self, log: Path) -> None:
        self.log, self.read_to, self.partial, self.seen = log, 0, b"", False

    def __call__(self) -> bool:
        if self.seen:
            return True
        try:
            with self.log.open("rb") as file:
                file.seek(self.read_to)
                added = file.read()
        except OSError:  # not written yet
            return False
        self.read_to += len(added)
        *lines, self.partial = (self.partial + added).split(b"\n")
        self.seen = any(line.startswith(MARK) and _stop_line(line) for line in lines)
        return self.seen


def _stop_line(line: bytes) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and isinstance(entry.get(STOPPED), str)
