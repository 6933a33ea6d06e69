"""The article's agent on a fixture of another language: the bench hands it the fixture's test command, and its done
check runs that command instead of pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.agents.article import launch
from bench.agents.base import AgentSettings, Place

PLACE = Place(
    python="python3",
    repo="/repo",
    task_file="/repo/TASK.md",
    out_dir="/out",
    flint_url="http://flint:8080",
    jeff_url=None,
)


def settings(test_command: str, test_patterns: tuple[str, ...] = ()) -> AgentSettings:
    return AgentSettings(
        preset="part3",
        ctx=2048,
        max_steps=3,
        keep=2,
        clear_at=0.5,
        sampling="{}",
        retries=0,
        retry_delay_s=0.0,
        request_timeout_s=10.0,
        jeff_timeout_s=1.0,
        jeff_steps=0,
        test_command=test_command,
        test_patterns=test_patterns,
    )


def test_the_agent_gets_the_test_command_of_another_languages_fixture_and_none_for_python() -> None:
    argv = launch(PLACE, settings("go test ./...")).argv
    assert argv[argv.index("--test-command") + 1] == "go test ./..."
    assert "--test-command" not in launch(PLACE, settings("")).argv


@pytest.mark.usefixtures("child_processes")
def test_the_done_check_passes_when_the_command_exits_0_and_tells_the_model_its_output_otherwise(
    tmp_path: Path,
) -> None:
    from agent.done import check_command_done

    passed = check_command_done(tmp_path, "echo all 3 tests passed", 30)
    assert (passed.passed, passed.pytest_exit, passed.summary) == (True, 0, "all 3 tests passed")
    failed = check_command_done(tmp_path, "echo './x.go:3:1: syntax error'; exit 2", 30)
    assert (failed.passed, failed.pytest_exit) == (False, 2)
    assert failed.feedback is not None and "./x.go:3:1: syntax error" in failed.feedback


def test_the_agent_gets_the_fixtures_test_patterns_with_its_test_command() -> None:
    argv = launch(PLACE, settings("java-tests", ("src/test/java/*.java",))).argv
    assert argv[argv.index("--test-patterns") + 1 :][:1] == ["src/test/java/*.java"]
    assert "--test-patterns" not in launch(PLACE, settings("", ("test_*.py",))).argv


@pytest.mark.parametrize(
    ("patterns", "tests", "others"),
    [
        (("*_test.go",), ["bracket_depth_test.go", "pkg/x_test.go"], ["bracket_depth.go", "test_x.py"]),
        (("tests/*.rs",), ["tests/digital_root.rs"], ["src/lib.rs"]),
        (("*.spec.js", "*.test.js"), ["acronym.spec.js", "lib/a.test.js"], ["acronym.js"]),
        (("src/test/java/*.java",), ["src/test/java/org/x/ATest.java"], ["src/main/java/A.java"]),
    ],
)
def test_another_languages_tests_are_protected_by_its_patterns(
    tmp_path: Path, patterns: tuple[str, ...], tests: list[str], others: list[str]
) -> None:
    from agent.guards import ProtectedTests
    from agent.tools import ToolCallError, Workspace

    for rel in [*tests, *others]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("original\n")
    workspace = Workspace(tmp_path, command_timeout=10, test_patterns=patterns)
    assert workspace.protected == frozenset(tests)
    with pytest.raises(ToolCallError):
        workspace.writable(tests[0])
    assert workspace.writable(others[0]) == tmp_path / others[0]
    guard = ProtectedTests(workspace.root, workspace.protected)
    (tmp_path / tests[-1]).write_text("passes now\n")  # as a command the agent ran might
    assert [r.path for r in guard.restore_changes()] == [tests[-1]]
    assert (tmp_path / tests[-1]).read_text() == "original\n"


def test_pythons_protected_tests_are_as_before_without_patterns(tmp_path: Path) -> None:
    from agent.tools import Workspace

    for rel in ("test_calc.py", "calc.go", "calc_test.go"):
        (tmp_path / rel).write_text("x\n")
    assert Workspace(tmp_path, command_timeout=10).protected == frozenset({"test_calc.py"})


def test_the_fixtures_test_command_runs_by_rule_exactly_as_given_and_nothing_more(tmp_path: Path) -> None:
    from agent.approval import Approver

    command = "go test ./..."
    approver = Approver("no", tmp_path, test_command=command)
    assert approver.decide(command, None) == ("run", "rule")
    assert approver.decide(f"  {command} ", None) == ("run", "rule")
    for other in (f"{command} && rm -rf src", "go test -exec sh ./...", "go run ."):
        assert approver.decide(other, None) == ("refused", "flag")
    assert Approver("no", tmp_path).decide(command, None) == ("refused", "flag")
