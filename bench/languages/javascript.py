"""JavaScript: Jest, as exercism's JavaScript track runs its tests; graded from Jest's JSON report, written to a file.

Node.js is Debian's; Jest and Babel (exercism's tests `import` the solution as an ES module, which Babel turns into
CommonJS for Jest) are installed from npm into the image when it is built (through this machine's npm configuration,
bench/containers/language_images.py), so nothing is downloaded when the tests run. The exercise's own package.json and
Babel config are not used: `jest` in the image runs with the bench's configuration, in which exercism's `xtest` (a
test left out until the student removes the x) is a test like any other, while a test the exercise itself skips
(`test.skip`, `test.todo`: exercism's slow cases, which its runner never runs) is not counted; and a test may take
a minute, not Jest's 5 s, so that a slow case passes on a loaded machine. A test's id is `FILE::describe test`; when a
test file does not load (a syntax error, a missing export), its suite's first line of error is the first error.
"""

from __future__ import annotations

import json
import re

from bench.languages.base import Language, TestReport, first_line

HOME = "/opt/bench-npm"  # the npm packages' folder in the image
OUTCOMES = {"passed": "passed", "failed": "failed"}
NOT_RUN = ("pending", "skipped", "todo", "disabled")  # declared so in the test file: no test of the task
CONFIG = {
    "testEnvironment": "node",
    "testTimeout": 60000,
    "setupFilesAfterEnv": [f"{HOME}/setup.js"],
    "transform": {
        r"\.[cm]?jsx?$": [
            f"{HOME}/node_modules/babel-jest",
            {
                "babelrc": False,
                "configFile": False,
                "presets": [[f"{HOME}/node_modules/@babel/preset-env", {"targets": {"node": "current"}}]],
            },
        ]
    },
    "testPathIgnorePatterns": ["/node_modules/"],
}
# `jest` on the PATH runs the bench's Jest with the bench's configuration in the current folder.
JEST = f"""#!/bin/sh
exec node {HOME}/node_modules/jest/bin/jest.js --config {HOME}/jest.config.json --rootDir "$PWD" "$@"
"""
SETUP = """globalThis.xtest = globalThis.test;
globalThis.xit = globalThis.it;
globalThis.xdescribe = globalThis.describe;
"""


def read_report(report: str, stderr: str) -> TestReport:
    try:
        data = json.loads(report)
    except ValueError:
        error = first_line(stderr, r"\S") or "Jest wrote no report"
        return TestReport(build_error=error)
    result = TestReport()
    errors = []
    for suite in data.get("testResults", []) if isinstance(data, dict) else []:
        file = _relative(str(suite.get("name", "")))
        cases = suite.get("assertionResults") or []
        if not cases and suite.get("status") == "failed":
            errors.append(_suite_error(str(suite.get("message", ""))) or f"{file} did not run")
        for case in cases:
            if case.get("status") in NOT_RUN:
                continue
            name = " ".join([*case.get("ancestorTitles", []), str(case.get("title", ""))])
            result.record(f"{file}::{name}", OUTCOMES.get(str(case.get("status")), "failed"))
    if errors and not result.outcomes:
        result.build_error = errors[0]
    return result


def _suite_error(message: str) -> str | None:
    """A suite that did not run: its `...Error:` line (Babel's syntax errors), else the line under Jest's heading."""
    found = first_line(message, r"^[ \t]*\w*Error\b") or first_line(message, r"^[ \t]*[^\s●]")
    return found and re.sub(r"/\S*/repo/", "", found)


def _relative(path: str) -> str:
    """The test file's path in the repository: Jest names it whole, and the grader's copy is a folder `repo`."""
    return path.split("/repo/", 1)[1] if "/repo/" in path else path.rsplit("/", 1)[-1]


def test_names(source: str) -> list[str]:
    return [name for _, name in re.findall(r"""\b(?:x?test|x?it)\s*\(\s*(['"`])((?:(?!\1)[^\\]|\\.)*)\1""", source)]


def file_of(test: str, files: list[str]) -> str | None:
    file = test.split("::")[0]
    return file if file in files else None


JAVASCRIPT = Language(
    name="javascript",
    test_patterns=("*.spec.js", "*.test.js"),
    source_suffixes=(".js",),
    test_command="jest",
    packages=("nodejs",),
    grade_command='jest --ci --runInBand --json --outputFile="$HOME/jest-report.json"',
    report_file="jest-report.json",
    read_report=read_report,
    test_names=test_names,
    file_of=file_of,
    ignored=("node_modules/",),
    npm=("jest@29.7.0", "babel-jest@29.7.0", "@babel/core@7.29.17", "@babel/preset-env@7.29.17"),
    image_files={
        f"{HOME}/jest.config.json": json.dumps(CONFIG, indent=1) + "\n",
        f"{HOME}/setup.js": SETUP,
        "/usr/local/bin/jest": JEST,
    },
)
