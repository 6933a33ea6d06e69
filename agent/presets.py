"""The published versions of the agent, as data (DESIGN.md §3.2).

part2     no clearing; a cut answer is taken as the answer; done = pytest passes
clearing  part2 plus clearing past --clear-at of the window
part3     clearing; a cut answer is dropped and the model is told so
strict    part3, and done also needs a changed non-test file and a new test
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    clears: bool  # clear old material past --clear-at of the window, and on a 400 context error
    drops_cut: bool  # a cut answer is dropped (part3) rather than taken as the answer (part2)
    strict_done: bool  # done also needs a changed non-test file and a new test function


PRESETS: dict[str, Preset] = {
    "part2": Preset("part2", clears=False, drops_cut=False, strict_done=False),
    "clearing": Preset("clearing", clears=True, drops_cut=False, strict_done=False),
    "part3": Preset("part3", clears=True, drops_cut=True, strict_done=False),
    "strict": Preset("strict", clears=True, drops_cut=True, strict_done=True),
}
