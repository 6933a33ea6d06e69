"""What the bench needs to know of a language: which files are tests, how the tests run, and how their report reads.

Python is graded by pytest sessions of their own (bench/score/sessions.py); every other language by one run of its
test command in the grader container, whose machine-readable report `read_report` turns into an outcome per test.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath


@dataclass
class TestReport:
    """What one run of a language's tests said: an outcome per test id, and the compiler's first error when the
    tests did not build (then no outcome is known, and every test counts as failed)."""

    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed / failed / skipped
    build_error: str | None = None
    conflicting: list[str] = field(default_factory=list)  # tests reported twice with two outcomes (counted failed)

    def record(self, test: str, outcome: str) -> None:
        """One outcome of `test`; a second, different one marks the test as conflicting, and failed: the runner
        reports each test once, so two verdicts mean that the tested code printed one of them."""
        before = self.outcomes.get(test)
        if test in self.conflicting:
            outcome = "failed"
        elif before is not None and before != outcome:
            self.conflicting.append(test)
            outcome = "failed"
        self.outcomes[test] = outcome


@dataclass(frozen=True)
class Language:
    name: str
    test_patterns: tuple[str, ...]  # file names (fnmatch) of test files, or paths when a pattern holds a "/"
    source_suffixes: tuple[str, ...]  # the language's own files (an exercism exercise of it names only these)
    test_command: str  # what the agent (and a user) runs: plain output
    packages: tuple[str, ...] = ()  # Debian packages of the toolchain, for its sandbox image
    grade_command: str = ""  # what the grader runs: the runner's machine-readable report on stdout
    grade_environment: dict[str, str] = field(default_factory=dict)  # caches in /tmp: the copy may be read-only
    read_report: Callable[[str, str], TestReport] | None = None  # (stdout, stderr) -> TestReport
    test_names: Callable[[str], list[str]] | None = None  # the test functions a test file's source defines
    # (test id, test files) -> the file that holds it; None: the file that defines the id's top-level name
    file_of: Callable[[str, list[str]], str | None] | None = None
    build_files: tuple[str, ...] = ()  # files beside the code an exercise needs to build (go.mod, Cargo.toml)
    ignored: tuple[str, ...] = ()  # build output never part of a diff (target/)
    # Where the grade command's runner writes its report: read from that file, not from stdout, so that what the
    # tested code prints is never taken for the runner's report. "": the report is stdout.
    report_file: str = ""
    # The image beyond Debian's packages (bench/containers/language_images.py): npm packages installed through this
    # machine's npm configuration into /opt/bench-npm, text files written (path -> text; executable under bin/),
    # and a shell command run as root after them (a runner's main built once).
    npm: tuple[str, ...] = ()
    image_files: dict[str, str] = field(default_factory=dict)
    image_setup: str = ""

    def is_test_file(self, path: str) -> bool:
        return matches(path, self.test_patterns)


def matches(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether `path` (relative, POSIX) matches a pattern: by its name, or whole when the pattern holds a "/"."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(path if "/" in p else name, p) for p in patterns)


def first_line(text: str, pattern: str) -> str | None:
    """The first line of `text` matching the regular expression `pattern`, stripped; None when none does."""
    found = re.search(pattern, text, re.MULTILINE)
    if found is None:
        return None
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.start())
    return text[start : end if end >= 0 else len(text)].strip()[:400]
