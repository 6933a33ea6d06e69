"""The agent's request log read back (agent/requests.py): every body the agent sent to Flint, rebuilt whole from the
differences the side file holds, in the order sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import ResultsError

Body = dict[str, Any]
REQUESTS_FILE = "events.requests.jsonl"  # beside events.jsonl, as agent.requests.beside names it


@dataclass(frozen=True)
class RequestBodies:
    """The bodies by request number; `complete` is False when the agent stopped writing them at its size cap."""

    bodies: list[Body]
    complete: bool

    def get(self, number: object) -> Body | None:
        if isinstance(number, int) and not isinstance(number, bool) and 0 <= number < len(self.bodies):
            return self.bodies[number]
        return None


def parse_request_log(text: str, where: str = REQUESTS_FILE) -> RequestBodies:
    """The bodies of a request log's text; ResultsError when a line is damaged (a cut last line is dropped)."""
    bodies: list[Body] = []
    rest: dict[str, Any] = {}
    lines = [line for line in text.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            if index == len(lines) - 1:
                break  # the agent was killed mid-line
            raise ResultsError(f"{where}: line {index + 1} is not JSON; the request log is damaged") from None
        if not isinstance(record, dict) or record.get("request") != len(bodies):
            raise ResultsError(f"{where}: line {index + 1} is not request {len(bodies)}; the request log is damaged")
        if record.get("truncated"):
            return RequestBodies(bodies, complete=False)
        kept, tail = record.get("from"), record.get("messages")
        if not isinstance(kept, int) or not isinstance(tail, list) or (bodies and kept > len(bodies[-1]["messages"])):
            raise ResultsError(f"{where}: request {len(bodies)} does not follow from the one before it")
        if isinstance(record.get("body"), dict):
            rest = record["body"]
        previous = bodies[-1]["messages"] if bodies else []
        bodies.append({**rest, "messages": previous[:kept] + tail})
    return RequestBodies(bodies, complete=True)


def load_request_log(run_dir: Path) -> RequestBodies | None:
    """The request log kept in a run's folder; None when the agent wrote none (an older agent)."""
    path = run_dir / REQUESTS_FILE
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}") from e
    return parse_request_log(text, str(path))
