"""The published versions of the agent, and the improved ones, as data (docs/agent.md, Presets).

part2     no clearing; a cut answer is taken as the answer; done = pytest passes
clearing  part2 plus clearing past --clear-at of the window
part3     clearing; a cut answer is dropped and the model is told so
part3+    part3 with what the article left open: clearing before a request that would pass --clear-at (not after
          an answer that is then dropped), older done-check output cleared too, and a done check that planted
          files cannot fool (agent/isolated_pytest.py)
strict    part3+, and done also needs a changed non-test file and a new test (collected by pytest)
late      part3+ that clears later: before a request estimated past 3/4 of the window, whatever --clear-at says
          (on the suite's real traces, `bench replay` found it computes a quarter fewer prompt tokens anew)
summary   part3+ that summarizes instead of clearing: on part3+'s trigger, the material a clearing would replace
          is replaced by a summary Flint writes (agent/summary.py)
summary-jeff  as summary, written by Jeff
hybrid    part3+ that clears first, and summarizes (Flint) the old turns only when the request is still past the
          threshold
jeff-first  part3+ where Jeff acts first, with Flint's conversation and tools, for --jeff-steps steps (3) or until
          he hands over; Flint takes every later step (agent/jeff_first.py)
jeff-gate part3+ where Jeff, each step, reads a short state and takes the step himself or passes it to Flint

part3+, strict, late and the summary presets clear only what the placeholder makes smaller (agent/clearing.py).

The first three send the article's words and behave as its code did; improvements go into part3+ and strict only.
The guards against the shell (approval rules, restored tests, refused hard links) hold in every preset.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Preset:
    name: str
    clears: bool  # clear old material past --clear-at of the window, and on a 400 context error
    drops_cut: bool  # a cut answer is dropped (part3) rather than taken as the answer (part2)
    strict_done: bool  # done also needs a changed non-test file and a new test function
    # part3+: clear before sending a request estimated past --clear-at (instead of after the answer that came back),
    # and clear the output of older failed done checks along with old tool results
    clears_before_send: bool = False
    trusts_planted: bool = True  # the done check runs pytest in the repository as it is (the article's)
    clear_at: float | None = None  # the preset's own threshold, in place of --clear-at (None: --clear-at)
    # Every HTTP 500 that says "Failed to parse" is a cut answer, as in the article; False: not one that names a
    # part of the request (agent/parse_failures.py), which is retried instead
    article_parse_rule: bool = True
    room_only: bool = False  # clear only what the placeholder makes smaller (the article cleared every old result)
    summary_by: str | None = None  # summary presets: who writes the summary, flint or jeff (agent/summary.py)
    clears_first: bool = False  # hybrid: clear, and summarize the old turns only when that was not enough
    jeff_acts: str | None = None  # jeff-first: Jeff acts first (first); jeff-gate: Jeff decides each step (gate)

    @property
    def jeff_reads_conversation(self) -> bool:
        """Jeff reads Flint's conversation (he writes its summaries, or takes its steps): his window must hold it,
        where elsewhere he answers a one-line question (the bench sets his window by this: jeff_conversation_ctx)."""
        return self.summary_by == "jeff" or self.jeff_acts is not None

    def clear_threshold(self, given: float) -> float:
        """The clearing threshold in force: the preset's own (late's 0.75), else the one given (--clear-at). The
        bench records this one in its rows (clear_at), so a row says what the agent used."""
        return given if self.clear_at is None else self.clear_at


def improved(name: str, **changes: Any) -> Preset:
    """A preset built on part3+ (its trigger, its done check, its parse rule, room-only clearing)."""
    part3_plus = Preset(
        name,
        clears=True,
        drops_cut=True,
        strict_done=False,
        clears_before_send=True,
        trusts_planted=False,
        article_parse_rule=False,
        room_only=True,
    )
    return replace(part3_plus, **changes)


PRESETS: dict[str, Preset] = {
    "part2": Preset("part2", clears=False, drops_cut=False, strict_done=False),
    "clearing": Preset("clearing", clears=True, drops_cut=False, strict_done=False),
    "part3": Preset("part3", clears=True, drops_cut=True, strict_done=False),
    "part3+": improved("part3+"),
    "strict": improved("strict", strict_done=True),
    "late": improved("late", clear_at=0.75),
    "summary": improved("summary", summary_by="flint"),
    "summary-jeff": improved("summary-jeff", summary_by="jeff"),
    "hybrid": improved("hybrid", summary_by="flint", clears_first=True),
    "jeff-first": improved("jeff-first", jeff_acts="first"),
    "jeff-gate": improved("jeff-gate", jeff_acts="gate"),
}
