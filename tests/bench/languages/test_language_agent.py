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


def settings(test_command: str) -> AgentSettings:
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
