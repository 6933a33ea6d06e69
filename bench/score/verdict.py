"""One grading's verdict from its sessions' reports: plain pytest's outcomes, confirmed by the sealed judge.

Tests that import the code are run by two judges (bench/score/sessions.py): the sealed one, whose pytest never
imports the repository (the code runs in a confined process of its own, bench/score/standin.py), and plain pytest
(the open session: the code in the tests' process, as any pytest run has it). Plain pytest's outcome is the verdict,
so an honest solution gets exactly what pytest gives it, whatever its tests hand the code; the sealed judge checks
it: a test plain pytest passes that the sealed judge fails (and could take) counts as failed, and the grading is
flagged tampered, naming the tests. A test that handed the code what cannot cross to its process (a function, a mock,
an object of the test's own) is graded by plain pytest alone, and counted (`hidden_unsealed`).

No report turns a grade into "not measured": a session that timed out, wrote no junit XML or one that does not parse
counts the tests the witness did not see pass as failed; one whose canaries or witness say it was tampered with
counts none as passed; both flag the grading, with the reason in `error`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.score.sessions import Judged, Planned

JUDGES = {"program": "the hidden tests' session", "library": "the sealed judge", "open": "plain pytest"}
NAMED = 5  # tests named in a flag; the rest counted


@dataclass
class Verdict:
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> outcome: plain pytest's, where confirmed
    flags: list[str] = field(default_factory=list)  # why the grading is flagged tampered
    notes: list[str] = field(default_factory=list)  # how the sessions ran
    unsealed: set[str] = field(default_factory=set)  # tests graded by plain pytest alone
    decided: set[str] = field(default_factory=set)  # tests in which the code answered a verdict's operation itself
    confinement: str = ""  # what confined the sealed judge's code process; "" when none ran


def _named(tests: list[str]) -> str:
    more = f" and {len(tests) - NAMED} more" if len(tests) > NAMED else ""
    return ", ".join(tests[:NAMED]) + more


def combine(planned: list[Planned], judged: list[Judged]) -> Verdict:
    """The sessions' reports, in the order planned, made into one verdict."""
    found = Verdict()
    sealed: dict[str, str] = {}
    refused: set[str] = set()
    checked: set[str] = set()  # test files the sealed judge ran
    for plan, result in zip(planned, judged, strict=True):
        for problem in (result.tampered, result.void):
            if problem:
                found.flags.append(f"{JUDGES[plan.style]}: {problem}")
        found.notes.extend(note for note in result.notes if note not in found.notes)
        if plan.style == "library":
            sealed.update(result.outcomes)
            refused |= result.refused
            found.decided |= result.decided
            found.confinement = found.confinement or result.confinement or ""
            checked.update([*plan.hidden, *plan.visible])
        else:
            found.outcomes.update(result.outcomes)
    passed = [test for test, outcome in found.outcomes.items() if outcome == "passed"]
    if "collection" in refused:  # a test module that handed the code what cannot cross as it was imported
        uncollected = {test for test in sealed if "::" not in test}
        refused |= {test for test in found.outcomes if test.split("::")[0] in uncollected}
    unconfirmed = sorted(
        test
        for test in passed
        if test.split("::")[0] in checked and test not in refused and sealed.get(test) != "passed"
    )
    for test in unconfirmed:
        found.outcomes[test] = "failed"
    if unconfirmed:
        found.flags.append(
            f"the sealed judge failed {len(unconfirmed)} tests that plain pytest passed ({_named(unconfirmed)}): "
            "they count as failed"
        )
    found.unsealed = {test for test in refused if test in found.outcomes}
    found.decided &= set(found.outcomes)
    return found
