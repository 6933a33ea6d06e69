"""Bounding what goes into one trace event, whatever a model or a hostile server put into it.

A trace event copies values that others control: the server's `usage` and `timings`, error messages, the model's
tool arguments, the files it planted. None of them may make a line unbounded, break JSON, or crash a reader, so
every field passes through `bound_fields` first:

- strings keep their first MAX_STRING characters (and all fields of an event together at most MAX_CHARS), then a
  note of how many were left out; lone surrogates become U+FFFD;
- lists and objects keep their first MAX_ITEMS entries; in a field of the event itself, a list's left-out count is
  a field of its own (`planted_omitted: 89950`), deeper down a last entry says it;
- nesting deeper than MAX_DEPTH is replaced by a note; so are NaN, infinities and integers of more than
  MAX_DIGITS digits (JSON has no NaN, and a 4,000-digit number is no count);
- other values (paths, exceptions) become their text.

`bound_fields` says which fields it changed; the trace lists them in the event's `trimmed`.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_STRING = 4_000
MAX_CHARS = 24_000
MAX_ITEMS = 50
MAX_DEPTH = 8
MAX_DIGITS = 18
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with each lone surrogate (a code point that is no character, which JSON can carry) made U+FFFD."""
    return LONE_SURROGATE.sub("\ufffd", text)


class _Bounder:
    def __init__(self) -> None:
        self.chars_left = MAX_CHARS
        self.changed = False

    def value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return (
                value if len(str(abs(value))) <= MAX_DIGITS else self.note(f"[an integer of {len(str(value))} digits]")
            )
        if isinstance(value, float):
            return value if math.isfinite(value) else self.note(f"[not a finite number: {value}]")
        if isinstance(value, str):
            return self.string(value)
        if depth >= MAX_DEPTH and isinstance(value, (list, tuple, dict)):
            return self.note(f"[nested deeper than {MAX_DEPTH} levels]")
        if isinstance(value, (list, tuple)):
            items = [self.value(item, depth + 1) for item in value[:MAX_ITEMS]]
            if len(value) > MAX_ITEMS:
                items.append(self.note(f"[{len(value) - MAX_ITEMS} more items]"))
            return items
        if isinstance(value, dict):
            kept = {self.string(str(k)): self.value(v, depth + 1) for k, v in list(value.items())[:MAX_ITEMS]}
            if len(value) > MAX_ITEMS:
                kept["..."] = self.note(f"[{len(value) - MAX_ITEMS} more keys]")
            return kept
        return self.string(str(value))

    def string(self, text: str) -> str:
        clean = valid_text(text)
        keep = min(len(clean), MAX_STRING, max(self.chars_left, 0))
        self.chars_left -= keep
        self.changed = self.changed or clean != text or keep < len(clean)
        if keep == len(clean):
            return clean
        return clean[:keep] + f"...[{len(clean) - keep} more characters]"

    def note(self, text: str) -> str:
        self.changed = True
        return text


def bound_fields(fields: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The fields, each bounded as the module docstring says, and the names of those that changed."""
    bounder = _Bounder()
    bounded: dict[str, Any] = {}
    trimmed = []
    for name, value in fields.items():
        bounder.changed = False
        if isinstance(value, (list, tuple)) and len(value) > MAX_ITEMS:
            bounded[name] = [bounder.value(item, 1) for item in value[:MAX_ITEMS]]
            bounded[f"{name}_omitted"] = len(value) - MAX_ITEMS
            bounder.changed = True
        else:
            bounded[name] = bounder.value(value, 0)
        if bounder.changed:
            trimmed.append(name)
    return bounded, trimmed
