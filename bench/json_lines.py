"""Text of one JSON document a line (a runner's test events, the recording proxy's log), read leniently: the
objects, in order; what is not JSON (what a program printed beside its events, a line cut short when the writer was
stopped) is passed over.

A line may hold several objects one after another: libtest writes an event and its newline in two writes, so a line
the tested code printed from another thread can land between them (`{"event":"failed",...}{...}`), and reading only
whole lines would lose the runner's own event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

DECODER = json.JSONDecoder()


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        yield from _line_objects(line.strip())


def _line_objects(line: str) -> Iterator[dict[str, Any]]:
    """The objects a line holds from its start, one after another; the rest of it from the first text that is not
    one is passed over."""
    at = 0
    while at < len(line):
        try:
            found, at = DECODER.raw_decode(line, at)
        except ValueError:
            return
        if isinstance(found, dict):
            yield found
        while at < len(line) and line[at].isspace():
            at += 1
