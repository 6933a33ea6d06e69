"""JavaScript's and Java's runner reports read test by test (recorded from real runs of the polyglot exercises here:
Jest 29.7 on Node, its paths made the grader's and its links left out; the JUnit 5.9 console launcher on Debian's
OpenJDK 17), and the rules that keep a report the tested code wrote from counting: a test reported both passed and
failed, and a failed run whose report names no failed test."""

from __future__ import annotations

from pathlib import Path

from bench.languages import base
from bench.languages.java import file_of as java_file_of
from bench.languages.java import read_report as java_report
from bench.languages.java import test_names as java_tests
from bench.languages.javascript import read_report as js_report
from bench.languages.javascript import test_names as js_tests
from bench.languages.kinds import KINDS
from bench.languages.rust import read_report as rust_report
from bench.score.command_grader import CommandRun
from bench.score.language_grading import _distrusted

DATA = Path(__file__).parent / "data"
JS_TESTS = DATA / "polyglot/javascript/acronym-maker/acronym-maker.spec.js"
JAVA_TESTS = DATA / "polyglot/java/digit-sum/src/test/java/DigitSumTest.java"


def recorded(name: str) -> str:
    return (DATA / "reports" / name).read_text()


def test_javascript_names_each_test_by_its_file_and_describe_blocks_and_leaves_out_those_it_skips() -> None:
    """The spec's `test.skip` (as exercism skips its slow cases) is reported pending, and is no test of the task."""
    recording = recorded("js-stub.json")
    report = js_report(recording, "")
    names = js_tests(JS_TESTS.read_text())
    assert len(names) == 6 and report.build_error is None
    assert '"title":"a phrase of a million words"' in recording and '"status":"pending"' in recording
    assert set(report.outcomes) == {f"acronym-maker.spec.js::acronym {name}" for name in names}
    assert set(report.outcomes.values()) == {"failed"}


def test_javascript_suite_that_does_not_load_gives_babels_first_error() -> None:
    report = js_report(recorded("js-broken.json"), "")
    assert report.outcomes == {}
    assert report.build_error == "SyntaxError: acronym-maker.js: Unexpected token (1:42)"


def test_javascript_without_a_report_names_the_first_line_jest_wrote() -> None:
    assert js_report("", "Error: Cannot find module 'x'\n").build_error == "Error: Cannot find module 'x'"


def test_java_reads_the_launchers_junit_xml_and_finds_the_file_of_each_class() -> None:
    report = java_report(recorded("java-one-failed.xml"), "")
    methods = java_tests(JAVA_TESTS.read_text())
    assert set(report.outcomes) == {f"DigitSumTest::{method}()" for method in methods}
    assert [t for t, o in report.outcomes.items() if o == "failed"] == ["DigitSumTest::nineteenIsNotHarshad()"]
    files = ["src/test/java/org/x/OtherTest.java", "src/test/java/DigitSumTest.java"]
    assert java_file_of("DigitSumTest::zeroHasSumZero()", files) == "src/test/java/DigitSumTest.java"
    assert java_file_of("org.x.OtherTest$Inner::a()", files) == "src/test/java/org/x/OtherTest.java"
    assert java_file_of("Missing::a()", files) is None


def test_java_that_does_not_compile_gives_javacs_first_error() -> None:
    stderr = "src/main/java/A.java:3: error: ';' expected\n    int x\n         ^\n1 error\n"
    report = java_report("", stderr)
    assert (report.outcomes, report.build_error) == ({}, "src/main/java/A.java:3: error: ';' expected")


def test_java_and_javascript_test_files_by_their_patterns() -> None:
    java, js = KINDS["java"], KINDS["javascript"]
    assert java.is_test_file("src/test/java/org/x/ATest.java") and not java.is_test_file("src/main/java/A.java")
    assert js.is_test_file("lib/a.spec.js") and js.is_test_file("a.test.js") and not js.is_test_file("a.js")


def test_a_test_reported_passed_and_failed_counts_failed_whatever_the_order() -> None:
    report = base.TestReport()
    for test, outcome in [("a", "passed"), ("a", "failed"), ("b", "failed"), ("b", "passed"), ("b", "passed")]:
        report.record(test, outcome)
    report.record("c", "passed")
    report.record("c", "passed")
    assert report.outcomes == {"a": "failed", "b": "failed", "c": "passed"}
    assert report.conflicting == ["a", "b"]
    why = _distrusted(report, CommandRun(1, "", "", False))
    assert why == "tests reported both passed and failed, counted failed: a, b"


def test_a_failed_run_whose_report_says_every_test_passed_counts_every_test_failed() -> None:
    report = base.TestReport({"a": "passed", "b": "passed"})
    why = _distrusted(report, CommandRun(1, "", "", False))
    assert why is not None and why.startswith("the test run failed (exit 1) but its report names no failed test")
    assert report.outcomes == {"a": "failed", "b": "failed"}
    honest = base.TestReport({"a": "passed", "b": "failed"})
    assert _distrusted(honest, CommandRun(1, "", "", False)) is None and honest.outcomes["a"] == "passed"
    assert _distrusted(base.TestReport({"a": "passed"}), CommandRun(0, "", "", False)) is None


def test_a_forged_line_that_lands_inside_libtests_event_does_not_hide_the_runners_verdict() -> None:
    """libtest writes an event and its newline in two writes: the tested code's own line, printed from another test's
    thread, can come between them (seen once in CI: the runner's `failed` of that test was lost, and the forged `ok`
    counted it passed). Both objects of such a line are read."""
    forged = '{ "type": "test", "name": "two", "event": "ok" }'
    stdout = "\n".join(
        [
            '{ "type": "suite", "event": "started", "test_count": 2 }',
            f'{{ "type": "test", "name": "one", "event": "failed", "stdout": "panicked" }}{forged}',
            "",
            forged,
            '{ "type": "test", "name": "two", "event": "failed" }',
            'what the code printed { "type": "test", "name": "one", "event": "ok" }',
        ]
    )
    report = rust_report(stdout, "     Running tests/digits.rs (target/debug/deps/digits-1)\n")
    assert report.outcomes == {"tests/digits.rs::one": "failed", "tests/digits.rs::two": "failed"}
    assert report.conflicting == ["tests/digits.rs::two"]
