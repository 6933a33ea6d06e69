"""Speculative decoding's figures of a run checked against Flint's /metrics: the tokens drafted and those accepted,
summed from the answers' timings (bench/measure/trace_numbers.py), against the rise of llama-server's own counters
over the run (b11434: `llamacpp:spec_decode_num_draft_tokens_total` and `..._accepted_tokens_total`, kept at 0 by a
server that does not draft). A run whose Flint drafted nothing by either count has nothing to check: its draft
columns stay empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from bench.measure.trace_numbers import TraceNumbers

DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"
ACCEPTED = "llamacpp:spec_decode_num_accepted_tokens_total"


@dataclass(frozen=True)
class DraftCheck:
    """How the trace's drafted and accepted tokens compare with /metrics' counters over the run."""

    status: str  # ok | mismatch | counter_reset | unchecked; "" when nothing was drafted
    drafted: int | None  # the rise of the drafted-tokens counter, when it can be trusted
    accepted: int | None
    note: str | None = None  # why it is not ok, for the row's error column


NOTHING = DraftCheck("", None, None)


def check_drafts(
    numbers: TraceNumbers,
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    restarted: bool = False,
) -> DraftCheck:
    """The trace's draft sums against the counters read before and after the run (None: /metrics not read);
    `restarted`: the server watch saw Flint restart, so the counters say nothing of the run."""
    trace = (numbers.draft_tokens, numbers.draft_accepted)
    if restarted:
        return DraftCheck("counter_reset", None, None, "Flint restarted during the run: its draft counters say nothing")
    deltas = _deltas(before, after)
    if isinstance(deltas, str):
        return NOTHING if trace == (None, None) else DraftCheck("unchecked", None, None, deltas)
    drafted, accepted = deltas
    if drafted < 0 or accepted < 0:
        note = "Flint's speculative-decoding counters went down: the server restarted during the run"
        return DraftCheck("counter_reset", None, None, note)
    if trace == (None, None) and deltas == (0, 0):
        return NOTHING
    if trace == deltas:
        return DraftCheck("ok", drafted, accepted)
    said = f"trace {trace[0]} drafted, {trace[1]} accepted; /metrics {drafted} drafted, {accepted} accepted"
    if None in trace:
        return DraftCheck("unchecked", drafted, accepted, f"draft tokens not summed from the answers' timings ({said})")
    if numbers.unanswered or numbers.unparsed_500s:  # their drafts were counted, and reported to no one
        lost = "request(s) were never answered or ended in an HTTP 500"
        note = f"draft tokens not checked: {numbers.unanswered + numbers.unparsed_500s} {lost} ({said})"
        return DraftCheck("unchecked", drafted, accepted, note)
    return DraftCheck("mismatch", drafted, accepted, f"draft tokens: {said}")


def _deltas(before: Mapping[str, float] | None, after: Mapping[str, float] | None) -> tuple[int, int] | str:
    """Both counters' rise over the run, or why there is none to compare."""
    if before is None or after is None:
        return "Flint's /metrics not read, so drafted tokens are not cross-checked"
    values = [before.get(DRAFTED), after.get(DRAFTED), before.get(ACCEPTED), after.get(ACCEPTED)]
    if any(value is None or not math.isfinite(value) for value in values):
        return "Flint's /metrics has no finite speculative-decoding counters, so drafted tokens are not cross-checked"
    drafted_before, drafted_after, accepted_before, accepted_after = (int(value or 0) for value in values)
    return drafted_after - drafted_before, accepted_after - accepted_before
