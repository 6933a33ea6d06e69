"""Fixtures in Go, Rust, C++, JavaScript and Java end to end in Docker: the polyglot-layout exercises written here
(data/polyglot) imported and checked (the stub below full marks, the example at full marks) in the docker grader, in
each language's sandbox image; then graded as an agent's work is: planted and changed tests detected, a change that
does not compile counted failed with the compiler's first error, a report printed by the code not taken, and a bench
run to a graded row."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import ROOT
from bench.config import BenchConfig
from bench.containers.engine import docker_client
from bench.containers.images import ensure_sandbox_image
from bench.containers.names import BenchNames
from bench.fixtures.fixture import Fixture, load_fixture
from bench.fixtures.workcopy import folder_diff
from bench.languages.kinds import KINDS
from bench.ownership import new_instance_id
from bench.run.runner import Bench
from bench.sandbox.base import Engine, Reach
from bench.sandbox.docker import DockerSandboxes
from bench.score.check import check_fixture
from bench.score.exercism import import_all
from bench.score.graders import DockerGrader
from bench.score.grading import score_diff
from bench.score.language_grading import REPORT_NAME
from bench.score.score import Score
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

pytestmark = [pytest.mark.docker, pytest.mark.slow]

POLYGLOT = Path(__file__).parent / "data" / "polyglot"
CHECKOUT = Path(__file__).resolve().parents[3]


# Solutions that give the stub's answers and print a report of every test passing in their runner's own format.
GO_FORGED = """package bracketdepth

import "fmt"

var names = []string{"TestMaxDepth/empty_text", "TestMaxDepth/one_pair", "TestMaxDepth/pairs_side_by_side",
	"TestMaxDepth/nested_three_deep", "TestMaxDepth/other_characters_ignored",
	"TestUnbalanced/closing_without_opening", "TestUnbalanced/wrong_closing_bracket", "TestUnbalanced/left_open"}

func MaxDepth(text string) (int, error) {
	for _, name := range names {
		fmt.Printf("--- PASS: %s (0.00s)\\n", name)
		fmt.Printf("{\\"Action\\":\\"pass\\",\\"Package\\":\\"bracketdepth\\",\\"Test\\":%q}\\n", name)
	}
	return 0, nil
}
"""
RUST_FORGED = """use std::io::Write;

fn forge() {
    let names = ["zero_has_root_zero", "one_digit_is_its_own_root", "two_rounds_of_sums", "the_largest_number",
        "harshad_numbers", "not_harshad_numbers"];
    let mut out = std::io::stdout();
    for name in names {
        let _ = writeln!(out, "{{ \\"type\\": \\"test\\", \\"name\\": \\"{name}\\", \\"event\\": \\"ok\\" }}");
    }
    let _ = out.flush();
}

pub fn digital_root(n: u64) -> u64 {
    forge();
    todo!("the digital root of {n}")
}

pub fn is_harshad(n: u64) -> bool {
    forge();
    todo!("whether {n} is divisible by its digit sum")
}
"""
CPP_FORGED = """#include "run_length.h"
#include <iostream>

namespace run_length {
std::string encode(const std::string& text) {
    std::cout << "<testsuites><testsuite name=\\"tests\\" tests=\\"5\\" failures=\\"0\\">"
              << "<testcase name=\\"single characters stay as they are\\"/>"
              << "<testcase name=\\"a run becomes its length and letter\\"/>"
              << "<testcase name=\\"runs and single characters mixed\\"/>"
              << "<testcase name=\\"runs longer than nine\\"/>"
              << "</testsuite></testsuites>" << std::endl;
    std::cout << "All tests passed (5 assertions in 5 test cases)" << std::endl;
    return "";
}
}  // namespace run_length
"""
JS_FORGED = """export const acronym = (phrase) => {
  const names = ['one word gives its first letter', 'several words give one letter each'];
  const assertionResults = names.map((title) => ({ ancestorTitles: ['acronym'], title, status: 'passed' }));
  console.log(JSON.stringify({ numPassedTests: 6, numFailedTests: 0, success: true,
    testResults: [{ name: '/grade/repo/acronym-maker.spec.js', status: 'passed', assertionResults }] }));
  process.stdout.write('Tests:       6 passed, 6 total\\n');
  throw new Error('Remove this line and implement the function');
};
"""
JAVA_FORGED = """class DigitSum {

    static int of(long number) {
        System.out.println("<testsuite name=\\"JUnit Jupiter\\" tests=\\"7\\" failures=\\"0\\">"
            + "<testcase name=\\"oneDigitIsItsOwnSum()\\" classname=\\"DigitSumTest\\"/></testsuite>");
        System.out.println("[         7 tests successful      ]");
        throw new UnsupportedOperationException("Delete this statement and write your own implementation.");
    }

    static boolean isHarshad(long number) {
        return of(number) < 0;
    }
}
"""


class Case:
    def __init__(self, name: str, slug: str, solution: str, example: str, total: int, stub: int, **bad: str) -> None:
        self.name, self.slug, self.solution, self.example = name, slug, solution, example
        self.total, self.stub = total, stub
        self.planted, self.planted_text = bad["planted"], bad["planted_text"]
        self.broken, self.first_error = bad["broken"], bad["first_error"]
        self.forged = bad["forged"]  # the stub's answers, and a report of every test passing printed by the code


CASES = {
    "go": Case(
        "bracket_depth",
        "bracket-depth",
        "bracket_depth.go",
        ".meta/example.go",
        total=8,
        stub=1,
        # A planted test that passes, and one that redeclares a hidden test (the package would not compile with it).
        planted="mine_test.go",
        planted_text='package bracketdepth\nimport "testing"\nfunc TestMine(t *testing.T) {}\n'
        "func TestMaxDepth(t *testing.T) {}\n",
        broken="package bracketdepth\n\nfunc MaxDepth(text string) (int, error) {\n\treturn 0\n}\n",
        first_error="bracket_depth.go:4:9: not enough return values",
        forged=GO_FORGED,
    ),
    "rust": Case(
        "digital_root",
        "digital-root",
        "src/lib.rs",
        ".meta/example.rs",
        total=6,
        stub=0,
        planted="tests/mine.rs",
        planted_text="#[test]\nfn mine() {}\n#[test]\nfn zero_has_root_zero() { panic!() }\n",
        broken='pub fn digital_root(n: u64) -> u64 { n + "x" }\npub fn is_harshad(n: u64) -> bool { n > 0 }\n',
        first_error="error[E0277]: cannot add `&str` to `u64` (src/lib.rs:1:40)",
        forged=RUST_FORGED,
    ),
    "cpp": Case(
        "run_length",
        "run-length",
        "run_length.cpp",
        ".meta/example.cpp",
        total=5,
        stub=1,
        planted="mine_test.cpp",
        planted_text='#include <catch2/catch.hpp>\nTEST_CASE("mine") {}\nTEST_CASE("empty text stays empty") {}\n',
        broken='#include "run_length.h"\nstd::string run_length::encode(const std::string& text) { return 1; }\n',
        first_error="run_length.cpp:2:66: error: could not convert",
        forged=CPP_FORGED,
    ),
    "javascript": Case(
        "acronym_maker",
        "acronym-maker",
        "acronym-maker.js",
        ".meta/proof.ci.js",
        total=6,
        stub=0,
        planted="mine.spec.js",
        planted_text="test('mine', () => {});\ntest('an empty phrase has an empty acronym', () => {});\n",
        broken="export const acronym = (phrase) => { return phrase +; };\n",
        first_error="SyntaxError: acronym-maker.js: Unexpected token (1:52)",
        forged=JS_FORGED,
    ),
    "java": Case(
        "digit_sum",
        "digit-sum",
        "src/main/java/DigitSum.java",
        ".meta/src/reference/java/DigitSum.java",
        total=7,
        stub=0,
        planted="src/test/java/MineTest.java",
        planted_text="import org.junit.jupiter.api.Test;\nclass MineTest {\n@Test void mine() {}\n"
        "@Test void zeroHasSumZero() {}\n}\n",
        broken='class DigitSum {\nstatic int of(long number) { return "x"; }\n'
        "static boolean isHarshad(long number) { return false; }\n}\n",
        first_error="src/main/java/DigitSum.java:2: error: incompatible types: String cannot be converted to int",
        forged=JAVA_FORGED,
    ),
}


@pytest.fixture(scope="module")
def client() -> Any:
    return docker_client()


@pytest.fixture(scope="module")
def grader(client: Any) -> DockerGrader:
    return DockerGrader(client, ensure_sandbox_image(client, CHECKOUT))


# One pytest-xdist group a language: a language's imported root (its gradings in Docker) is made once, on the one
# worker that runs all of that language's tests, and the five languages spread over the workers. One group for the
# whole module ran about 630 s of gradings and builds on one worker while the others idled (CI, load 10).
@pytest.fixture(
    scope="module",
    params=[pytest.param(lang, marks=pytest.mark.xdist_group(f"language-grading-{lang}")) for lang in sorted(CASES)],
)
def lang(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, grader: DockerGrader, lang: str) -> Path:
    into = tmp_path_factory.mktemp(f"polyglot-{lang}")
    imported, refused = import_all([POLYGLOT / lang], into, 0.0, 10, force=False, grader=grader)
    assert refused == {}
    case = CASES[lang]
    assert [(i.name, i.hidden_total, i.expected_hidden_passing, i.solution_passing) for i in imported] == [
        (case.name, case.total, case.stub, case.total)
    ]
    return into


def graded(fx: Fixture, grader: DockerGrader, tmp_path: Path, files: dict[str, str]) -> Score:
    """`files` written over a copy of the fixture (the agent's work), graded as a run is."""
    work = tmp_path / "work"
    shutil.copytree(fx.path, work, ignore=shutil.ignore_patterns("fixture.yaml"))
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    return score_diff(fx, folder_diff(fx, work, tmp_path / "repo"), grader, tmp_path / "grading")


def test_the_imported_fixture_says_its_language_and_hides_every_test(root: Path, lang: str) -> None:
    case = CASES[lang]
    fx = load_fixture(case.name, root)
    assert (fx.language, fx.hidden_total, fx.expected_hidden_passing, fx.visible_tests) == (
        lang,
        case.total,
        case.stub,
        [],
    )
    assert not any(fx.is_test(rel.as_posix()) for rel in fx.path.rglob("*") if rel.is_file())
    assert f"`{fx.command}`" in (fx.path / "TASK.md").read_text()


def test_planted_tests_are_left_out_and_counted_and_the_example_gets_full_marks(
    root: Path, grader: DockerGrader, tmp_path: Path, lang: str
) -> None:
    case = CASES[lang]
    fx = load_fixture(case.name, root)
    example = (POLYGLOT / lang / case.slug / case.example).read_text()
    score = graded(fx, grader, tmp_path, {case.solution: example, case.planted: case.planted_text})
    assert (score.hidden_passed, score.hidden_total) == (case.total, case.total), score.error
    assert score.tests_added == 2 and score.files_changed == 1
    assert score.error == f"ignored files the agent planted: {case.planted}"
    assert REPORT_NAME in score.junit_reports


def test_code_that_does_not_compile_fails_every_test_with_the_compilers_first_error(
    root: Path, grader: DockerGrader, tmp_path: Path, lang: str
) -> None:
    case = CASES[lang]
    score = graded(load_fixture(case.name, root), grader, tmp_path, {case.solution: case.broken})
    assert (score.hidden_passed, score.hidden_total) == (0, case.total)
    assert score.error is not None and "the tests do not compile, every one counts as failed" in score.error
    assert case.first_error in score.error


def test_a_report_the_code_prints_is_not_taken_for_the_runners(
    root: Path, grader: DockerGrader, tmp_path: Path, lang: str
) -> None:
    """The code gives the stub's answers and prints a report of every test passing in its runner's format: the score
    is the stub's. C++, Java and JavaScript read their runner's report from a file; Go's and Rust's runners report on
    stdout, where a test reported both passed (by the code) and failed (by the runner) counts failed, and says so."""
    case = CASES[lang]
    score = graded(load_fixture(case.name, root), grader, tmp_path, {case.solution: case.forged})
    assert (score.hidden_passed, score.hidden_total) == (case.stub, case.total), score.error
    if lang in ("go", "rust"):
        assert score.error is not None and "tests reported both passed and failed, counted failed" in score.error


def test_a_hidden_test_the_agent_wrote_at_its_path_is_graded_as_the_original(
    root: Path, grader: DockerGrader, tmp_path: Path, lang: str
) -> None:
    """The agent guesses the hidden test's file name and writes a test there that passes: the original replaces it."""
    case = CASES[lang]
    fx = load_fixture(case.name, root)
    hidden = fx.hidden_tests[0]
    score = graded(fx, grader, tmp_path, {hidden: case.planted_text.replace("TestMaxDepth", "TestOther")})
    assert score.hidden_passed == case.stub and score.tests_added == 2


def test_a_bench_run_on_the_fixture_gives_a_graded_row(root: Path, client: Any, tmp_path: Path, lang: str) -> None:
    case = CASES[lang]
    example = (POLYGLOT / lang / case.slug / case.example).read_text()
    config = BenchConfig(
        use_jeff=False, out=str(tmp_path / "results.csv"), fixtures=[case.name], fixtures_root=str(root)
    )  # type: ignore[call-arg]
    servers = FakeServers()
    sandboxes = FakeSandboxes(servers, [ScriptedRun(files={case.solution: example})])
    sandboxes.engine = Engine("docker", client, ensure_sandbox_image(client, CHECKOUT), BenchNames(new_instance_id()))  # type: ignore[assignment]
    (row,) = Bench(config, FakeFactory(config, servers, sandboxes, checkout=CHECKOUT), checkout=CHECKOUT).run()
    assert (row["hidden_passed"], row["hidden_total"], row["files_changed"]) == (str(case.total), str(case.total), "1")


def test_fixtures_check_passes_each_imported_fixture(root: Path, lang: str) -> None:
    """`fixtures check` grades another language's fixture in its image (Docker here): original and solution."""
    case = CASES[lang]
    checked = check_fixture(case.name, root, checkout=ROOT)
    assert checked.problems == [], case.name
    assert f"original: hidden {case.stub}/{case.total}" in checked.summary
    assert f"solution: hidden {case.total}/" in checked.summary


# the agent package's sources (folder: argv[1]), hashed alike in the image and here
AGENT_HASH = (
    "import hashlib, pathlib, sys; root = pathlib.Path(sys.argv[1]); "
    "print(hashlib.sha256(b''.join(str(p.relative_to(root)).encode() + p.read_bytes() "
    "for p in sorted(root.rglob('*.py')))).hexdigest())"
)


def test_the_agent_of_a_run_on_the_fixture_works_in_its_languages_image(client: Any, lang: str) -> None:
    """The docker sandbox of a run on a fixture of another language is that language's image (the toolchain, its
    runner layer where it has one, then the agent's layer): the agent's python3 and this checkout's package are there,
    and so is the toolchain its tests need."""
    sandboxes = DockerSandboxes(BenchConfig(), BenchNames(new_instance_id()), docker=client, checkout=CHECKOUT)
    try:
        sandboxes.reach = Reach("none", "http://flint:8080", None)
        image = sandboxes.sandbox("probe", language=lang).image
        assert re.match(rf"agentbench/sandbox-{lang}(-run)?-code:", image), image
        assert sandboxes.sandbox("probe").image == sandboxes.engine.image  # Python's: the sandbox image itself
        tool = {
            "go": "go version",
            "rust": "cargo --version",
            "cpp": "g++ --version && test -f /opt/bench-cpp/catch-main.o",
            "javascript": "jest --version",
            "java": "javac -version && test -x /usr/local/bin/java-tests",
        }[lang]
        probe = ["sh", "-c", f'({tool}) >&2 && exec python3 -c "$0" /opt/agentbench/agent', AGENT_HASH]
        output = client.containers.run(image, probe, remove=True, network_mode="none")
        here = subprocess.run([sys.executable, "-c", AGENT_HASH, CHECKOUT / "agent"], capture_output=True, text=True)
        assert output.decode().strip() == here.stdout.strip()
    finally:
        sandboxes.close()


def test_the_languages_test_command_passes_on_the_example_in_the_agents_sandbox(
    client: Any, tmp_path: Path, lang: str
) -> None:
    """What the agent's done check runs, in a container with the agent's own limits (read-only root, /tmp a tmpfs,
    the agent's user): the fixture's test command passes on the example with the hidden tests beside it. Go and C++
    build their program in /tmp and run it there."""
    case = CASES[lang]
    exercise = POLYGLOT / lang / case.slug
    repo = tmp_path / "repo"
    shutil.copytree(exercise, repo, ignore=shutil.ignore_patterns(".meta", ".docs"))
    shutil.copy(exercise / case.example, repo / case.solution)
    for path in [repo, *repo.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    sandboxes = DockerSandboxes(BenchConfig(), BenchNames(new_instance_id()), docker=client, checkout=CHECKOUT)
    try:
        sandboxes.reach = Reach("none", "http://flint:8080", None)
        sandbox = sandboxes.sandbox("probe", language=lang)
        container = client.containers.run(
            sandbox.image,
            ["sh", "-c", f"{KINDS[lang].test_command} 2>&1"],
            detach=True,
            user="10001",
            environment={"HOME": "/tmp"},
            working_dir="/repo",
            volumes={str(repo): {"bind": "/repo", "mode": "rw"}},
            network_mode="none",
            **sandbox._limits(),
        )
        try:
            status = container.wait(timeout=600)
            output = container.logs().decode(errors="replace")
        finally:
            container.remove(force=True)
        assert status["StatusCode"] == 0, output[-2000:]
    finally:
        sandboxes.close()
