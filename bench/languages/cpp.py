"""C++: the exercise's sources and its Catch2 tests built with g++ and run; graded from Catch2's JUnit reporter.

Exercism's C++ exercises carry Catch2 2 (`test/catch.hpp`, `test/tests-main.cpp`) and a CMakeLists.txt that names the
program after its folder and runs it as a build step; their tests include Debian's `<catch2/catch.hpp>` instead of
their copy when `EXERCISM_TEST_SUITE` is defined, as exercism's own test runner does. The bench compiles them itself,
with both that and `EXERCISM_RUN_ALL_TESTS` defined (else all but the first test are left out), and links them with
Catch2's main built once into the image (Debian's catch2 2.13): compiling that main is most of a build's time, and
`test/tests-main.cpp` is left out. A test is a TEST_CASE by its name (a SECTION adds `/section`). The JUnit report
goes to a file, so what the program prints is never read as one. When the program does not build, g++'s first
`error:` line is the compiler's first error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from bench.languages.base import Language, TestReport, first_line

MAIN = "/opt/bench-cpp/catch-main"  # .cpp and .o: Catch2's main, built when the image is
BUILD = (
    "g++ -std=c++17 -DEXERCISM_RUN_ALL_TESTS -DEXERCISM_TEST_SUITE -I. -o /tmp/tests "
    f"$(ls *.cpp test/*.cpp 2>/dev/null | grep -vx test/tests-main.cpp) {MAIN}.o"
)


def read_report(report: str, stderr: str) -> TestReport:
    start = report.find("<testsuites")
    if start < 0:
        error = first_line(stderr, r"^\S+:\d+:\d+: (fatal )?error: ") or first_line(stderr, r"\S")
        return TestReport(build_error=error or "the tests did not build (no report)")
    end = report.find("</testsuites>", start)
    try:
        root = ElementTree.fromstring(report[start : end + len("</testsuites>")] if end >= 0 else report[start:])
    except ElementTree.ParseError:
        return TestReport()  # the program ended mid-report (a crash): no test is known to have passed
    outcomes: dict[str, str] = {}
    for case in root.iter("testcase"):
        failed = any(child.tag in ("failure", "error") for child in case)
        name = case.get("name", "")
        if outcomes.get(name, "passed") == "passed":
            outcomes[name] = "failed" if failed else "passed"
    return TestReport(outcomes)


def test_names(source: str) -> list[str]:
    return re.findall(r'TEST_CASE\s*\(\s*"((?:[^"\\]|\\.)*)"', source)


CPP = Language(
    name="cpp",
    test_patterns=("*_test.cpp",),
    source_suffixes=(".cpp", ".h", ".hpp"),
    test_command=f"{BUILD} && /tmp/tests",
    packages=("g++", "catch2"),
    grade_command=f'{BUILD} && /tmp/tests -r junit -o "$HOME/catch-report.xml"',
    report_file="catch-report.xml",
    read_report=read_report,
    test_names=test_names,
    build_files=("CMakeLists.txt", "test/tests-main.cpp", "test/catch.hpp"),
    image_files={f"{MAIN}.cpp": "#define CATCH_CONFIG_MAIN\n#include <catch2/catch.hpp>\n"},
    image_setup=f"g++ -std=c++17 -c -o {MAIN}.o {MAIN}.cpp",
)
