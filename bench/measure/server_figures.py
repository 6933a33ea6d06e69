"""The servers' `usage` and `timings` figures in a trace, read defensively: a value that no llama-server could have
reported (nested, negative, not finite, a token count above the window, a fraction of a token) is unreadable.

An unreadable value never reaches a results row: it is dropped, so every sum that needs it is left empty ("not
measured"), and a note says which answer carried what. The agent copies the servers' numbers into its trace
verbatim, so these are the numbers of whatever answered on the server's port.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_n", "cache_n", "predicted_n")
TIME_FIELDS = ("prompt_ms", "predicted_ms")
# Speculative decoding's tokens (timings of a server that drafts): a request's drafts can add up past the window.
DRAFT_FIELDS = ("draft_n", "draft_n_accepted")
# Server time of one answer: a day is far beyond any run's timeout, so more is not a measurement.
MAX_MS = 24 * 3600 * 1000.0
# A refused request's size may exceed the window (that is why it was refused), but not by more than this factor.
REFUSED_FACTOR = 64
NOTES_KEPT = 3  # notes named one by one; the rest are counted


def _bad_count(value: Any, window: int | None) -> str | None:
    """Why `value` is not a token count of a window of `window` tokens, or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number ({type(value).__name__})"
    if not math.isfinite(value):
        return "not finite"
    if value != int(value):
        return "not a whole number of tokens"
    if value < 0:
        return "negative"
    if window is not None and value > window:
        return f"above the {window}-token window"
    return None


def _bad_ms(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"not a number ({type(value).__name__})"
    if not math.isfinite(value):
        return "not finite"
    if not 0 <= value <= MAX_MS:
        return "negative" if value < 0 else f"above {MAX_MS:.0f} ms"
    return None


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, str, bool)) or value is None else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass
class FigureReader:
    """Reads the figures of one trace; `notes` gathers what was unreadable."""

    window: int | None  # Flint's window in tokens; None: only the checks that need no window
    jeff_window: int | None
    unreadable: list[str] = field(default_factory=list)

    def figures(self, event: dict[str, Any], part: str, jeff: bool = False) -> dict[str, Any]:
        """The readable numeric fields of event[part] (usage or timings); {} when it is absent or not an object."""
        raw = event.get(part)
        if raw is None:
            return {}
        where = f"{'Jeff' if jeff else 'Flint'}'s answer at step {_shown(event.get('step'))}"
        if not isinstance(raw, dict):
            self.unreadable.append(f"{where}: {part} is {_shown(raw)}, not an object")
            return {}
        window = self.jeff_window if jeff else self.window
        kept: dict[str, Any] = {}
        for name in (*TOKEN_FIELDS, *DRAFT_FIELDS, *TIME_FIELDS):
            if raw.get(name) is None:
                continue
            bound = None if name in DRAFT_FIELDS else window
            problem = _bad_ms(raw[name]) if name in TIME_FIELDS else _bad_count(raw[name], bound)
            if problem:
                self.unreadable.append(f"{where}: {part}.{name} = {_shown(raw[name])} is {problem}")
            else:
                kept[name] = raw[name]
        return kept

    def cached(self, event: dict[str, Any]) -> Any:
        """usage.prompt_tokens_details.cached_tokens, the prompt tokens the server took from its cache as the OpenAI
        usage says it (the one cache figure a streaming client sees); None when absent or unreadable."""
        usage = event.get("usage")
        details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
        value = details.get("cached_tokens") if isinstance(details, dict) else None
        if value is None:
            return None
        problem = _bad_count(value, self.window)
        if problem:
            where = f"Flint's answer at step {_shown(event.get('step'))}"
            self.unreadable.append(f"{where}: usage.prompt_tokens_details.cached_tokens = {_shown(value)} is {problem}")
            return None
        return value

    def refused_size(self, event: dict[str, Any]) -> Any:
        """A refused request's n_prompt_tokens, or None when absent or unreadable."""
        value = event.get("n_prompt_tokens")
        if value is None:
            return None
        bound = self.window * REFUSED_FACTOR if self.window else None
        problem = _bad_count(value, bound)
        if problem:
            self.unreadable.append(
                f"a refused request at step {_shown(event.get('step'))}: n_prompt_tokens = {_shown(value)} is {problem}"
            )
            return None
        return value

    def notes(self) -> list[str]:
        """One note for the row's error column, or none."""
        if not self.unreadable:
            return []
        shown = "; ".join(self.unreadable[:NOTES_KEPT])
        more = f" (and {len(self.unreadable) - NOTES_KEPT} more)" if len(self.unreadable) > NOTES_KEPT else ""
        return [f"unreadable server figures, left out (the sums that need them are empty): {shown}{more}"]
