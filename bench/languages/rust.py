"""Rust: `cargo test` offline (the exercises need no crate); graded from libtest's JSON events.

libtest's `--format json` is unstable: RUSTC_BOOTSTRAP=1 lets the stable toolchain (Debian bookworm's rustc 1.63)
take it. Its events do not say which test binary they come from; cargo names each binary on stderr, in the order it
runs them (`Running` and the test file, `Doc-tests` and the crate), and each binary's events begin with a `suite`
`started` event: the n-th such event belongs to the n-th name. A test's id is `FILE::name`. `--include-ignored` runs the
tests exercism marks `#[ignore]` (all but the first). When the tests do not build, cargo's first `error` line (with
the place it points at) is the compiler's first error.
"""

from __future__ import annotations

import re

from bench.json_lines import json_objects
from bench.languages.base import Language, TestReport

OUTCOMES = {"ok": "passed", "failed": "failed", "ignored": "skipped"}
BINARY = re.compile(r"^\s*(?:Running (?:unittests )?(\S+)|Doc-tests (\S+))", re.MULTILINE)


def read_report(stdout: str, stderr: str) -> TestReport:
    binaries = [running or f"doc-tests {crate}" for running, crate in BINARY.findall(stderr)]
    report = TestReport()
    suite = -1
    for event in json_objects(stdout):
        if event.get("type") == "suite" and event.get("event") == "started":
            suite += 1
        elif event.get("type") == "test" and event.get("event") in OUTCOMES and isinstance(event.get("name"), str):
            source = binaries[suite] if 0 <= suite < len(binaries) else "?"
            report.record(f"{source}::{event['name']}", OUTCOMES[event["event"]])
    if not report.outcomes and suite < 0:
        report.build_error = first_error(stderr) or "the tests did not build (no test binary ran)"
    return report


def first_error(stderr: str) -> str | None:
    """cargo's first `error` line, with the `--> file:line:col` it points at."""
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^error(\[E\d+\])?: ", line) and not line.startswith("error: could not compile"):
            where = next((n.strip()[4:] for n in lines[index + 1 : index + 4] if n.strip().startswith("--> ")), "")
            return f"{line.strip()} ({where})"[:400] if where else line.strip()[:400]
    return next((line.strip()[:400] for line in lines if line.startswith("error")), None)


def test_names(source: str) -> list[str]:
    return re.findall(r"#\[test\][^{;]*?\bfn\s+(\w+)", source)


def file_of(test: str, files: list[str]) -> str | None:
    file = test.split("::")[0]
    return file if file in files else None


RUST = Language(
    name="rust",
    test_patterns=("tests/*.rs",),
    source_suffixes=(".rs", ".toml"),
    test_command="cargo test -- --include-ignored",
    packages=("cargo", "rustc"),
    grade_command="cargo test --offline --no-fail-fast -- --include-ignored -Z unstable-options --format json",
    grade_environment={
        "RUSTC_BOOTSTRAP": "1",
        "CARGO_HOME": "/tmp/cargo",
        "CARGO_TARGET_DIR": "/tmp/target",
        "CARGO_TERM_COLOR": "never",
        "CARGO_NET_OFFLINE": "true",
    },
    read_report=read_report,
    test_names=test_names,
    file_of=file_of,
    build_files=("Cargo.toml",),
)
