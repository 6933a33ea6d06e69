"""Lines that fit the terminal: a status line rewritten in place (`\\r\\033[K`) must never wrap, or each rewrite
leaves the wrapped part of the one before on screen; the workers' block moves up by its own count of lines, which a
wrapped line would break too. The whole line goes to the bench's log (bench.run.progress)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence

ELLIPSIS = "…"


def terminal_width() -> int:
    """The terminal's columns now (a resize counts at the next line); $COLUMNS wins, 80 when nothing says."""
    return shutil.get_terminal_size((80, 24)).columns


def fit(candidates: Sequence[str], width: int) -> str:
    """The first candidate (richest first) shorter than `width`, else the last cut to fit with `…`. Shorter than the
    width, not equal: a line that fills the last column leaves some terminals waiting to wrap."""
    room = max(width - 1, 1)
    for text in candidates:
        if len(text) <= room:
            return text
    return candidates[-1][: room - 1] + ELLIPSIS
