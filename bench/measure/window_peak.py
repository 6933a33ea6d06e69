"""The window's high-water mark of a run: the most tokens one of Flint's answers filled (its timings' cache_n +
prompt_n + predicted_n, bench/measure/trace_numbers.py), beside llama-server's own `llamacpp:n_tokens_max`.

b11434's /metrics figure is not a per-run one: the server keeps the largest count of tokens any slot held after a
decode, over its whole life (never reset), so it says something of a run only when it rose during it; then it is the
run's own peak. It also counts differently from the answers: a slot holds what was decoded into it, and an answer's
last token is sampled but never decoded (one fewer than the answer's figure), while drafted tokens are decoded
before the model rejects them (up to the draft's length more, with speculative decoding). Where the two differ by
more than that, the row's error says so; where the counter says nothing of the run, the cell is empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from bench.measure.trace_numbers import TraceNumbers

COUNTER = "llamacpp:n_tokens_max"


@dataclass(frozen=True)
class WindowPeak:
    """llama-server's n_tokens_max for the run (None: not a figure of this run), and why, for the row's error."""

    metrics: int | None
    note: str | None = None


def check_peak(
    numbers: TraceNumbers,
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    restarted: bool = False,
) -> WindowPeak:
    """The counter read before and after the run (None: /metrics not read), against the answers' peak."""
    # A restart, or /metrics unread: empty, and the reprocessed and draft checks' notes already say why.
    values = [m.get(COUNTER) for m in (before, after) if m is not None]
    if restarted or len(values) < 2 or not all(v is not None and math.isfinite(v) for v in values):
        return WindowPeak(None)
    start, end = (int(v or 0) for v in values)
    if end <= start:  # lower: a restart; equal: an earlier run went as high, so the counter cannot tell this run's
        return WindowPeak(None)
    return WindowPeak(end, _unexplained(numbers.n_tokens_max, end, numbers))


def _unexplained(answers: int | None, metrics: int, numbers: TraceNumbers) -> str | None:
    """A note where the counter and the answers' peak differ beyond what b11434's counting explains."""
    if answers is None:
        return None
    drafted = bool(numbers.draft_tokens)
    if metrics == answers - 1 or (drafted and metrics >= answers - 1):
        return None
    lost = numbers.unanswered + numbers.unparsed_500s
    why = f", and {lost} request(s) were never answered or ended in an HTTP 500" if lost else ""
    expected = "at least" if drafted else "exactly"
    return (
        f"n_tokens_max: /metrics {metrics}, the answers' peak {answers} ({expected} one fewer expected: an answer's "
        f"last token is never decoded{' and drafted tokens are' if drafted else ''}){why}"
    )
