"""pytest's junit XML read test by test: which test file each case belongs to, its outcome, and the counts.

Test ids are `file::Class::test`, built from the junit classname (dotted) matched against the files we asked
pytest to run; a file that failed to collect appears under its bare file name with the outcome `error`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree


def file_of(test_id: str, files: list[str]) -> str | None:
    """Which of `files` a junit test (classname.name, dotted) belongs to: the longest dotted-path prefix."""
    prefixes = {f.removesuffix(".py").replace("/", "."): f for f in files}
    matches = [p for p in prefixes if test_id == p or test_id.startswith(p + ".")]
    return prefixes[max(matches, key=len)] if matches else None


def parse_junit(xml_text: str, files: list[str]) -> dict[str, str]:
    """Per-test outcomes keyed `file::Class::test`; a file that failed to collect appears as `file` -> error."""
    outcomes: dict[str, str] = {}
    for case in ElementTree.fromstring(xml_text).iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        dotted = f"{classname}.{name}" if classname else name
        file = file_of(dotted, files)
        if file is None:
            continue
        prefix = file.removesuffix(".py").replace("/", ".")
        classes = classname[len(prefix) + 1 :].split(".") if len(classname) > len(prefix) else []
        test_id = "::".join([file, *classes, name]) if classname else file
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(kinds[0] if kinds else "", "passed")
        # A teardown error is reported as a second testcase of the same name: the worse outcome wins.
        if outcomes.get(test_id, "passed") == "passed":
            outcomes[test_id] = outcome
    return outcomes


def count(outcomes: dict[str, str], files: list[str]) -> tuple[int, int, list[str]]:
    """Passed and collected tests among `files`, and the files that failed to collect."""
    mine = {test_id: outcome for test_id, outcome in outcomes.items() if test_id.split("::")[0] in files}
    broken = sorted(test_id for test_id in mine if "::" not in test_id)
    tests = [outcome for test_id, outcome in mine.items() if "::" in test_id]
    return sum(outcome == "passed" for outcome in tests), len(tests), broken


def collection_errors(xml_text: str, files: list[str]) -> dict[str, str]:
    """Why each of `files` that failed to collect did: the last `E ` line of pytest's traceback (the exception)."""
    reasons: dict[str, str] = {}
    for case in ElementTree.fromstring(xml_text).iter("testcase"):
        if case.get("classname"):
            continue  # a test's own error; a file that did not collect has only a name
        file = file_of(case.get("name", ""), files)
        error = case.find("error")
        if file is None or error is None:
            continue
        lines = [line[1:].strip() for line in (error.text or "").splitlines() if line.startswith("E ")]
        reasons[file] = (lines[-1] if lines else error.get("message", "")).strip()[:200]
    return reasons
