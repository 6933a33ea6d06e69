"""The rules that void a grading run, one at a time, on hand-made junit outcomes and witness lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.score.tamper import Canaries, new_canaries, read_witness, tampering

HIDDEN = ["test_hidden.py"]
CANARIES = Canaries(file="test_c.py", must_fail="test_f", must_pass="test_p", appended="test_a", prefix="W:")


def honest() -> tuple[dict[str, str], str]:
    """Junit outcomes and witness output of a clean run: one hidden test passed, one failed, canaries as planted."""
    outcomes = {
        "test_hidden.py::test_ok": "passed",
        "test_hidden.py::test_bad": "failed",
        "test_hidden.py::test_a": "failed",
        "test_c.py::test_f": "failed",
        "test_c.py::test_p": "passed",
    }
    raised = {"test_hidden.py::test_bad", "test_hidden.py::test_a", "test_c.py::test_f"}
    lines = [
        f"W:{json.dumps({'test': test_id, 'when': when, 'raised': test_id in raised and when == 'call'})}"
        for test_id in outcomes
        for when in ("setup", "call", "teardown")
    ]
    return outcomes, "noise\n" + "\n".join(lines) + '\nW:{"exit": 1}\n1 failed'


def verdict(outcomes: dict[str, str], output: str, exit_code: int | None = 1) -> str | None:
    return tampering(outcomes, CANARIES, HIDDEN, read_witness(output, "W:"), exit_code)


def test_an_honest_run_passes_every_check() -> None:
    assert verdict(*honest()) is None


@pytest.mark.parametrize(
    ("test_id", "outcome", "reason"),
    [
        ("test_c.py::test_f", "passed", "must have failed, is reported passed"),
        ("test_hidden.py::test_a", "skipped", "must have failed, is reported skipped"),
        ("test_c.py::test_p", "failed", "must have passed, is reported failed"),
        ("test_c.py::test_f", None, "missing from the junit report"),
    ],
)
def test_a_canary_with_the_wrong_outcome_is_tampering(test_id: str, outcome: str | None, reason: str) -> None:
    outcomes, output = honest()
    if outcome is None:
        del outcomes[test_id]
    else:
        outcomes[test_id] = outcome

    assert reason in (verdict(outcomes, output) or "")


def test_a_hidden_file_that_did_not_collect_has_no_canary_to_check() -> None:
    outcomes, output = honest()
    for test_id in [t for t in outcomes if t.startswith("test_hidden.py::")]:
        del outcomes[test_id]
    outcomes["test_hidden.py"] = "error"

    assert verdict(outcomes, output) is None


def test_a_pass_the_witness_saw_raise_is_tampering() -> None:
    outcomes, output = honest()
    outcomes["test_hidden.py::test_bad"] = "passed"

    assert "test_hidden.py::test_bad passed, but it raised" in (verdict(outcomes, output) or "")


def test_a_pass_the_witness_never_saw_is_tampering() -> None:
    outcomes, output = honest()
    outcomes["test_hidden.py::test_invented"] = "passed"

    assert "the witness never saw it run" in (verdict(outcomes, output) or "")


def test_witness_lines_that_contradict_each_other_are_tampering() -> None:
    outcomes, output = honest()
    forged = 'W:{"test": "test_hidden.py::test_bad", "when": "call", "raised": false}'

    assert "witnessed both raising and not" in (verdict(outcomes, output + "\n" + forged) or "")


def test_no_witness_at_all_is_tampering() -> None:
    outcomes, _ = honest()

    assert "saw no test at all" in (verdict(outcomes, "1 failed") or "")


@pytest.mark.parametrize(("exit_code", "reason"), [(0, "session ended with status 1"), (5, "ended with status 1")])
def test_an_exit_status_other_than_the_sessions_is_tampering(exit_code: int, reason: str) -> None:
    assert reason in (verdict(*honest(), exit_code=exit_code) or "")


def test_exit_status_zero_with_failing_canaries_is_tampering_even_when_the_witness_agrees() -> None:
    outcomes, output = honest()

    assert "although the bench's must-fail canaries failed" in (
        verdict(outcomes, output.replace('"exit": 1', '"exit": 0'), exit_code=0) or ""
    )


def test_canaries_get_names_nothing_in_the_copy_uses(tmp_path: Path) -> None:
    (tmp_path / "witness").mkdir()
    (tmp_path / "test_hidden.py").write_text("def test_one():\n    pass\n")

    drawn = [new_canaries(tmp_path, HIDDEN, "witness") for _ in range(3)]

    names = [{c.file, c.must_fail, c.must_pass, c.appended} for c in drawn]
    assert all(len(n) == 4 for n in names) and len({frozenset(n) for n in names}) == 3
    assert all(name.startswith("test_") and "bench" not in name for n in names for name in n)
    text = (tmp_path / "test_hidden.py").read_text()
    assert text.startswith("def test_one():") and all(f"def {c.appended}():" in text for c in drawn)
    assert (tmp_path / "witness" / "bench_witness.py").read_text().count(repr(drawn[-1].prefix)) == 1
