"""Java: javac and the JUnit 5 console launcher, without Gradle; graded from the launcher's JUnit XML report.

Exercism's Java exercises are Gradle projects (`src/main/java`, `src/test/java`, JUnit 5 and AssertJ), run by a
Gradle wrapper that downloads Gradle, which cannot happen here, and Debian's gradle (4.4) is too old for their build
files. So the bench builds them itself: Debian's OpenJDK 17 compiles every `.java` under src/ against Debian's JUnit 5
and AssertJ jars, and the console launcher runs the test classes with `@Disabled` switched off (exercism disables all
tests but the first until the student enables them). A test's id is `Class::method()`, found in the test file named
after its top-level class. `java-tests` in the image does both steps (its arguments go to the launcher). The report
is a file, so what the code prints is never read as one. When the code does not compile, javac's first `error:` line
is the compiler's first error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import PurePosixPath

from bench.languages.base import Language, TestReport, first_line

JARS = "/usr/share/java"
# Classes go to a fresh folder of the user's home (/tmp in the grader): the repository may be read-only there.
JAVA_TESTS = f"""#!/bin/sh
set -e
classes="${{HOME:-/tmp}}/.java-tests/classes"
rm -rf "$classes" && mkdir -p "$classes"
javac -nowarn -encoding UTF-8 -d "$classes" -cp {JARS}/junit-platform-console-standalone.jar:{JARS}/assertj-core.jar \\
    $(find src -name '*.java')
exec java -jar {JARS}/junit-platform-console-standalone.jar -cp "$classes:{JARS}/assertj-core.jar" \\
    --scan-classpath "$classes" --disable-banner \\
    --config=junit.jupiter.conditions.deactivate='org.junit.*DisabledCondition' "$@"
"""
REPORT = "junit/TEST-junit-jupiter.xml"


def read_report(report: str, stderr: str) -> TestReport:
    if "<testsuite" not in report:
        error = first_line(stderr, r"^\S+\.java:\d+: error: ") or first_line(stderr, r"\S")
        return TestReport(build_error=error or "the tests did not build (no report)")
    try:
        root = ElementTree.fromstring(report)
    except ElementTree.ParseError:
        return TestReport()
    result = TestReport()
    for case in root.iter("testcase"):
        bad = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        outcome = "failed" if bad else "skipped" if skipped else "passed"
        result.record(f"{case.get('classname', '')}::{case.get('name', '')}", outcome)
    return result


def test_names(source: str) -> list[str]:
    return re.findall(r"@(?:Test|ParameterizedTest|RepeatedTest)\b[^{;]*?\bvoid\s+(\w+)\s*\(", source)


def file_of(test: str, files: list[str]) -> str | None:
    """The file of the test's top-level class: `Outer$Inner` and `pkg.Outer` are in `.../Outer.java`."""
    outer = test.split("::")[0].split("$")[0].rsplit(".", 1)[-1]
    return next((rel for rel in files if PurePosixPath(rel).name == f"{outer}.java"), None)


JAVA = Language(
    name="java",
    test_patterns=("src/test/java/*.java",),
    source_suffixes=(".java",),
    test_command="java-tests",
    packages=("openjdk-17-jdk-headless", "junit5", "libassertj-core-java"),
    grade_command='java-tests --details=none --reports-dir "$HOME/junit"',
    report_file=REPORT,
    read_report=read_report,
    test_names=test_names,
    file_of=file_of,
    ignored=("build/", ".gradle/"),
    image_files={"/usr/local/bin/java-tests": JAVA_TESTS},
)
