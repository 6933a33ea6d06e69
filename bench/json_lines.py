"""Text of one JSON document a line (a runner's test events, the recording proxy's log), read leniently: the lines
that are JSON objects, in order; any other line (what a program printed beside its events, a line cut short when
the writer was stopped) is passed over."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            yield found
