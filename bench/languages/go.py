"""Go: `go test` in the module at the repository's root; graded from `go test -json` (test2json's events).

A subtest is a test of its own: an exercism case table run with t.Run counts case by case, and its parent (which
passes exactly when they all do) is not counted again. Go 1.19 (Debian bookworm's) writes a build failure to stderr
only, as `file.go:LINE:COL: message` lines: the first of them is the compiler's first error.
"""

from __future__ import annotations

import re

from bench.json_lines import json_objects
from bench.languages.base import Language, TestReport, first_line

OUTCOMES = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def read_report(stdout: str, stderr: str) -> TestReport:
    seen = TestReport()
    failed_packages = []
    for event in json_objects(stdout):  # a line the code under test printed outside a test is not an event
        if event.get("Action") not in OUTCOMES:
            continue
        test = event.get("Test")
        if isinstance(test, str) and test:
            seen.record(test, OUTCOMES[event["Action"]])
        elif event["Action"] == "fail":
            failed_packages.append(str(event.get("Package", "")))
    outcomes = seen.outcomes
    leaves = {test: outcome for test, outcome in outcomes.items() if not _has_subtests(test, outcomes)}
    if leaves or not failed_packages and not stderr.strip():
        return TestReport(leaves, conflicting=seen.conflicting)
    error = first_line(stderr, r"^\S+\.go:\d+(:\d+)?: ") or first_line(stderr, r"\S") or "the tests did not build"
    return TestReport(leaves, build_error=error, conflicting=seen.conflicting)


def _has_subtests(test: str, outcomes: dict[str, str]) -> bool:
    return any(other.startswith(test + "/") for other in outcomes)


def test_names(source: str) -> list[str]:
    return re.findall(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(", source, re.MULTILINE)


GO = Language(
    name="go",
    test_patterns=("*_test.go",),
    source_suffixes=(".go",),
    test_command="go test ./...",
    packages=("golang-go",),
    grade_command="go test -json ./...",
    # The module cache and build cache in /tmp (the home of the grader's user); no network, no cgo (no C compiler).
    grade_environment={
        "GOCACHE": "/tmp/go-build",
        "GOPATH": "/tmp/go",
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    },
    read_report=read_report,
    test_names=test_names,
    build_files=("go.mod", "go.sum"),
)
