"""The rules that void a grading session, one at a time, on hand-made junit outcomes and witness records; and the
mutant canaries, made from real test code."""

from __future__ import annotations

import ast
import json

import pytest

from bench.score.canaries import add_mutants
from bench.score.tamper import Canaries, read_witness, resolution_problem, tampering

CANARIES = Canaries(file="test_c.py", must_fail="test_f", must_pass="test_p", mutants={"test_hidden.py": ["test_m"]})


def honest() -> tuple[dict[str, str], str]:
    """Junit outcomes and witness records of a clean run: one hidden test passed, one failed, canaries as planted."""
    outcomes = {
        "test_hidden.py::test_ok": "passed",
        "test_hidden.py::test_bad": "failed",
        "test_hidden.py::test_m": "failed",
        "test_c.py::test_f": "failed",
        "test_c.py::test_p": "passed",
    }
    raised = {"test_hidden.py::test_bad", "test_hidden.py::test_m", "test_c.py::test_f"}
    lines = [
        json.dumps({"test": test_id, "when": when, "raised": test_id in raised and when == "call"})
        for test_id in outcomes
        for when in ("setup", "call", "teardown")
    ]
    return outcomes, "\n".join(lines) + '\n{"exit": 1, "modules": {"todo": "todo.py"}}\n'


def verdict(
    outcomes: dict[str, str], witness: str, exit_code: int | None = 1, problem: str | None = None
) -> str | None:
    return tampering(outcomes, CANARIES, read_witness(witness, problem), exit_code, None)


def test_an_honest_run_passes_every_check() -> None:
    assert verdict(*honest()) is None


@pytest.mark.parametrize(
    ("test_id", "outcome", "reason"),
    [
        ("test_c.py::test_f", "passed", "must have failed, is reported passed"),
        ("test_hidden.py::test_m", "passed", "must have failed, is reported passed"),
        ("test_hidden.py::test_m", "skipped", "must have failed, is reported skipped"),
        ("test_c.py::test_p", "failed", "must have passed, is reported failed"),
        ("test_c.py::test_f", None, "missing from the junit report"),
    ],
)
def test_a_canary_with_the_wrong_outcome_is_tampering(test_id: str, outcome: str | None, reason: str) -> None:
    outcomes, witness = honest()
    if outcome is None:
        del outcomes[test_id]
    else:
        outcomes[test_id] = outcome

    assert reason in (verdict(outcomes, witness) or "")


def test_a_hidden_file_that_did_not_collect_has_no_canary_to_check() -> None:
    outcomes, witness = honest()
    for test_id in [t for t in outcomes if t.startswith("test_hidden.py::")]:
        del outcomes[test_id]
    outcomes["test_hidden.py"] = "error"

    assert verdict(outcomes, witness) is None


def test_a_pass_the_witness_saw_raise_is_tampering() -> None:
    outcomes, witness = honest()
    outcomes["test_hidden.py::test_bad"] = "passed"

    assert "test_hidden.py::test_bad passed, but it raised" in (verdict(outcomes, witness) or "")


def test_a_pass_the_witness_never_saw_is_tampering() -> None:
    outcomes, witness = honest()
    outcomes["test_hidden.py::test_invented"] = "passed"

    assert "the witness never saw it run" in (verdict(outcomes, witness) or "")


def test_a_subtest_that_raised_fails_its_test_without_a_conflict() -> None:
    """pytest 9 reports each subtest's phase: one raised and others did not; the test failed, honestly."""
    outcomes, witness = honest()
    subtests = [json.dumps({"test": "test_hidden.py::test_bad", "when": "call", "raised": r}) for r in (False, True)]

    assert verdict(outcomes, "\n".join(subtests) + "\n" + witness) is None


@pytest.mark.parametrize(
    ("problem", "reason"),
    [
        ("9 bytes arrived on the witness's decoy channels", "decoy channels"),
        ("the witness channel carried more than 8388608 bytes", "carried more than"),
    ],
)
def test_what_the_supervisor_saw_on_the_channel_is_tampering(problem: str, reason: str) -> None:
    assert reason in (verdict(*honest(), problem=problem) or "")


def test_an_unreadable_line_or_two_session_ends_are_tampering() -> None:
    outcomes, witness = honest()

    assert "unreadable witness line" in (verdict(outcomes, witness + "not json\n") or "")
    assert "two session ends" in (verdict(outcomes, witness + '{"exit": 1}\n') or "")


def test_no_witness_at_all_is_tampering() -> None:
    outcomes, _ = honest()

    assert "saw no test at all" in (verdict(outcomes, "") or "")


@pytest.mark.parametrize(("exit_code", "reason"), [(0, "session ended with status 1"), (5, "ended with status 1")])
def test_an_exit_status_other_than_the_sessions_is_tampering(exit_code: int, reason: str) -> None:
    assert reason in (verdict(*honest(), exit_code=exit_code) or "")


def test_exit_status_zero_with_failing_canaries_is_tampering_even_when_the_witness_agrees() -> None:
    outcomes, witness = honest()

    assert "although the bench's must-fail canaries failed" in (
        verdict(outcomes, witness.replace('"exit": 1', '"exit": 0'), exit_code=0) or ""
    )


@pytest.mark.parametrize(
    ("modules", "program_style", "reason"),
    [
        ({"todo": "todo.py"}, True, "imported todo from the repository"),
        ({"getpass": "getpass.py"}, False, "standing in for the module of that name"),
        ({"_pytest.reports": "_pytest/reports.py"}, False, "standing in"),
        ({"todo": "todo.py", "bench_witness": ".bench-grading/bench_witness.py"}, False, None),
        ({"test_hidden": ".bench-grading/hidden/test_hidden.py"}, True, None),
    ],
)
def test_modules_from_the_graded_folder_are_what_the_tests_meant(
    modules: dict[str, str], program_style: bool, reason: str | None
) -> None:
    problem = resolution_problem(modules, program_style, (".bench-grading/",))

    assert (problem is None) if reason is None else (reason in (problem or ""))


TESTS = """import unittest

from decimal import Decimal
from leap import days_in_year


def test_plain():
    # a comment the mutant keeps
    value = days_in_year(2015)
    assert value == 365


def test_nested_only():
    for year in (2015, 2016):
        assert days_in_year(year) in (365, 366)


@unittest.skip("not now")
def test_decorated():
    assert days_in_year(1) == 365


def test_built_value():
    assert {"total": Decimal("12.50")} == {"total": Decimal("12.50")}


class LeapTest(unittest.TestCase):
    def test_method(self):
        self.assertEqual(days_in_year(1900), 365)

    def test_subtests(self):
        for year in (1900, 2000):
            with self.subTest(year=year):
                self.assertEqual(days_in_year(year), 365)


class Helper:
    def test_not_collected(self):
        assert days_in_year(2023) == 365
"""


def test_mutants_twin_the_tests_a_changed_assertion_can_be_made_in() -> None:
    text, ids = add_mutants(TESTS, set(), per_test=2)

    tree = ast.parse(text)
    twinned = {name.split("::")[-1] for name in ids}
    assert len(ids) == 6 and len(twinned) == 6  # plain, built value, the method: two each, with names of their own
    assert sum("::" in name for name in ids) == 2 and all(name.startswith("LeapTest::") for name in ids if "::" in name)
    functions = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    assert functions.count("test_nested_only") == 1 and functions.count("test_not_collected") == 1
    assert text.count("# a comment the mutant keeps") == 3  # the original and its two twins, as written
    assert text.count("def test_decorated") == 1 and text.count("def test_subtests") == 1


def test_a_mutant_cannot_pass_where_its_original_passes() -> None:
    namespace: dict[str, object] = {}
    text, ids = add_mutants(TESTS.replace("from leap import days_in_year", ""), set(), per_test=2)
    exec(compile(text + "\ndef days_in_year(year):\n    return 365\n", "t", "exec"), namespace)  # noqa: S102

    for name in [n for n in ids if "::" not in n]:
        with pytest.raises((AssertionError, ArithmeticError, ValueError)):
            namespace[name]()  # type: ignore[operator]
    namespace["test_plain"]()  # type: ignore[operator]
    namespace["test_built_value"]()  # type: ignore[operator]


def test_the_witness_says_which_tests_it_saw_pass_and_what_confined_the_code() -> None:
    lines = [
        {"test": "t.py::test_a", "when": "setup", "raised": False},
        {"test": "t.py::test_a", "when": "call", "raised": False},
        {"test": "t.py::test_a", "when": "teardown", "raised": False},
        {"test": "t.py::test_b", "when": "setup", "raised": False},
        {"test": "t.py::test_b", "when": "call", "raised": False},  # killed before its teardown
        {"test": "t.py::test_c", "when": "call", "raised": True},
    ]
    ended = {"exit": 1, "subject": {"started": True, "confined": True, "abi": 3, "refused": {"t.py::test_c": ["x"]}}}
    witness = read_witness("\n".join(json.dumps(line) for line in [*lines, ended]))

    assert witness.passed() == ["t.py::test_a"]
    assert witness.refused() == ["t.py::test_c"]
    assert witness.confinement() == "landlock abi 3: files; open: tcp, signals, unix sockets"
    subject = {"started": True, "confined": True, "abi": 6, "unix_sockets_closed": True}
    assert read_witness(json.dumps({"exit": 0, "subject": subject})).confinement() == (
        "landlock abi 6: files, tcp, signals, unix sockets"
    )
    unconfined = read_witness(json.dumps({"exit": 1, "subject": {"started": True, "why": "no Landlock"}}))
    assert unconfined.confinement() == "none (no Landlock)"
    assert witness.notes() == []  # confined: nothing to say
    assert unconfined.notes() == [
        "the code under test ran unconfined (no Landlock): it could read and write the tests' folder while they "
        "were collected"
    ]
