"""Each language's runner report read test by test: recorded from real runs of the polyglot test exercises here
(data/polyglot) with Debian bookworm's toolchains (go 1.19, rustc 1.63 with cargo 0.66, g++ 12 with catch2 2.13):
the stub, the example (with a test the agent planted in src/lib.rs), and a change that does not compile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import ROOT
from bench.errors import FixtureError
from bench.fixtures.fixture import load_fixture
from bench.languages.base import matches
from bench.languages.cpp import read_report as cpp_report
from bench.languages.cpp import test_names as cpp_tests
from bench.languages.go import read_report as go_report
from bench.languages.go import test_names as go_tests
from bench.languages.kinds import KINDS, language
from bench.languages.rust import read_report as rust_report
from bench.languages.rust import test_names as rust_tests

REPORTS = Path(__file__).parent / "data" / "reports"


def recorded(name: str) -> str:
    return (REPORTS / name).read_text()


def test_go_counts_each_subtest_and_not_its_parent() -> None:
    report = go_report(recorded("go-stub.jsonl"), recorded("go-stub.stderr"))
    assert report.build_error is None
    assert len(report.outcomes) == 8 and "TestMaxDepth" not in report.outcomes
    assert [t for t, o in report.outcomes.items() if o == "passed"] == ["TestMaxDepth/empty_text"]


def test_go_build_failure_gives_the_compilers_first_error_and_no_outcome() -> None:
    report = go_report(recorded("go-build-failed.stdout"), recorded("go-build-failed.stderr"))
    assert report.outcomes == {}
    assert report.build_error == "./bracket_depth.go:2:47: not enough return values"


def test_go_lines_the_code_printed_are_not_events() -> None:
    stdout = 'hello\n{"Action":"pass","Test":"TestA"}\n[1, 2]\n{"Action":"fail","Test":"TestB"}\n'
    assert go_report(stdout, "").outcomes == {"TestA": "passed", "TestB": "failed"}


def test_rust_names_each_test_by_the_file_of_its_binary() -> None:
    report = rust_report(recorded("rust-stub.jsonl"), recorded("rust-stub.stderr"))
    assert report.build_error is None
    assert set(report.outcomes) == {f"tests/digital_root.rs::{name}" for name in rust_tests(_rust_test_file())}
    assert set(report.outcomes.values()) == {"failed"}


def test_rust_example_passes_and_a_unit_test_in_the_library_is_named_by_its_file() -> None:
    report = rust_report(recorded("rust-example.jsonl"), recorded("rust-example.stderr"))
    hidden = {t: o for t, o in report.outcomes.items() if t.startswith("tests/digital_root.rs::")}
    assert len(hidden) == 6 and set(hidden.values()) == {"passed"}
    assert report.outcomes["src/lib.rs::tests::planted"] == "passed"  # not a hidden test's: grading leaves it out


def test_rust_build_failure_gives_the_first_error_with_its_place() -> None:
    report = rust_report(recorded("rust-build-failed.stdout"), recorded("rust-build-failed.stderr"))
    assert report.outcomes == {}
    assert report.build_error == "error[E0277]: cannot add `&str` to `u64` (src/lib.rs:1:40)"


def test_cpp_reads_catch2s_junit_report_after_what_the_program_printed() -> None:
    report = cpp_report("printed by the code\n" + recorded("cpp-stub.xml"), "")
    test_file = (Path(__file__).parent / "data/polyglot/cpp/run-length/run_length_test.cpp").read_text()
    assert report.build_error is None and set(report.outcomes) == set(cpp_tests(test_file))
    assert [t for t, o in report.outcomes.items() if o == "passed"] == ["empty text stays empty"]


def test_cpp_build_failure_gives_the_compilers_first_error() -> None:
    report = cpp_report("", recorded("cpp-build-failed.stderr"))
    assert report.outcomes == {}
    assert report.build_error == "run_length.cpp:8:9: error: expected primary-expression before ';' token"


def test_cpp_report_cut_short_by_a_crash_passes_nothing() -> None:
    assert cpp_report(recorded("cpp-stub.xml")[:400], "").outcomes == {}


def test_test_names_from_source() -> None:
    assert go_tests("func TestA(t *testing.T) {}\nfunc helper() {}\nfunc ExampleB() {}\n") == ["TestA", "ExampleB"]
    assert rust_tests("#[test]\n#[ignore]\nfn a() {}\nfn b() {}\n#[test] fn c() {}\n") == ["a", "c"]


def test_test_file_patterns_by_name_or_by_path() -> None:
    go, rust, python = KINDS["go"], KINDS["rust"], KINDS["python"]
    assert go.is_test_file("pkg/x_test.go") and not go.is_test_file("x.go")
    assert rust.is_test_file("tests/leap.rs") and not rust.is_test_file("src/lib.rs")
    assert python.is_test_file("sub/test_x.py") and python.is_test_file("x_test.py")
    assert matches("a/b.spec.js", ["*.spec.js"]) and not matches("tests/a.rs", ["*.go"])


def test_an_unknown_language_names_those_there_are() -> None:
    with pytest.raises(FixtureError, match="unknown language 'cobol': one of python, go, rust, cpp"):
        language("cobol")


def _rust_test_file() -> str:
    return (Path(__file__).parent / "data/polyglot/rust/digital-root/tests/digital_root.rs").read_text()


def test_fixture_yaml_names_an_unknown_language_in_one_line(tmp_path: Path) -> None:
    shutil.copytree(Path(__file__).parents[3] / "fixtures/todo_repo", tmp_path / "fixtures/todo_repo")
    shutil.copytree(Path(__file__).parents[3] / "hidden_tests/todo_repo", tmp_path / "hidden_tests/todo_repo")
    yaml_file = tmp_path / "fixtures/todo_repo/fixture.yaml"
    yaml_file.write_text(yaml_file.read_text() + "language: cobol\n")
    with pytest.raises(FixtureError, match="language.*one of python, go, rust, cpp"):
        load_fixture("todo_repo", tmp_path)
    assert load_fixture("todo_repo", ROOT).language == "python"
