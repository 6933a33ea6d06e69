"""The done check: pytest for every preset; strict also wants a changed non-test file and a new test.
(What planted files cannot do to the checks of part3+ and strict: test_agent_done_isolation.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import prompts
from agent.done import check_done, take_snapshot, unmet_conditions


@pytest.mark.usefixtures("child_processes")
def test_an_untouched_passing_repository_passes_the_plain_check(repo: Path) -> None:
    result = check_done(repo, take_snapshot(repo), strict=False, trust_planted=True, timeout=60)
    assert result.passed and result.pytest_exit == 0 and result.summary.startswith("1 passed")
    assert result.feedback is None


@pytest.mark.usefixtures("child_processes")
def test_the_plain_check_leaves_no_caches_behind(repo: Path) -> None:
    check_done(repo, take_snapshot(repo), strict=False, trust_planted=True, timeout=60)
    assert sorted(p.name for p in repo.iterdir()) == ["TASK.md", "calc.py", "test_calc.py"]


@pytest.mark.usefixtures("child_processes")
def test_failing_tests_are_not_done_and_the_output_goes_to_the_model(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    result = check_done(repo, take_snapshot(repo), strict=False, trust_planted=True, timeout=60)
    assert not result.passed and result.pytest_exit == 1
    assert "1 failed" in result.summary
    assert result.feedback is not None and "assert -1 == 3" in result.feedback


@pytest.mark.usefixtures("child_processes")
def test_strict_names_both_missing_conditions_on_an_untouched_repository(repo: Path) -> None:
    result = check_done(repo, take_snapshot(repo), strict=True, trust_planted=True, timeout=60)
    assert not result.passed and result.pytest_exit == 0
    assert result.missing == [prompts.MISSING_CHANGE, prompts.MISSING_TEST]
    assert result.feedback is not None and prompts.MISSING_CHANGE in result.feedback


@pytest.mark.usefixtures("child_processes")
def test_strict_passes_once_code_changed_and_a_new_test_exists(repo: Path) -> None:
    start = take_snapshot(repo)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    assert check_done(repo, start, strict=True, trust_planted=True, timeout=60).missing == [prompts.MISSING_TEST]
    (repo / "test_sub.py").write_text("from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n")
    result = check_done(repo, start, strict=True, trust_planted=True, timeout=60)
    assert result.passed and result.missing == [] and result.summary.startswith("2 passed")


def test_a_new_test_file_alone_does_not_count_as_a_code_change(repo: Path) -> None:
    start = take_snapshot(repo)
    (repo / "test_more.py").write_text("def test_more():\n    pass\n")
    assert unmet_conditions(start, take_snapshot(repo), new_tests=1) == [prompts.MISSING_CHANGE]


def test_a_new_or_deleted_non_test_file_counts_as_a_change(repo: Path) -> None:
    (repo / "data.json").write_text("[]\n")
    start = take_snapshot(repo)
    (repo / "data.json").unlink()
    assert prompts.MISSING_CHANGE not in unmet_conditions(start, take_snapshot(repo), new_tests=1)
    (repo / "data.json").write_text("[]\n")
    (repo / "helpers.py").write_text("X = 1\n")
    assert prompts.MISSING_CHANGE not in unmet_conditions(start, take_snapshot(repo), new_tests=1)
    (repo / "helpers.py").unlink()
    (repo / "TASK.md").unlink()  # documentation: no change to the code
    assert prompts.MISSING_CHANGE in unmet_conditions(start, take_snapshot(repo), new_tests=1)


def test_the_snapshot_hashes_every_file_and_keeps_the_pytest_configuration(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "x_test.py").write_text("def test_x():\n    pass\n")
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -q\n")
    (repo / "link.py").symlink_to("calc.py")
    snapshot = take_snapshot(repo)
    assert set(snapshot.files) == {"TASK.md", "calc.py", "test_calc.py", "sub/x_test.py", "pytest.ini", "link.py"}
    assert snapshot.files["link.py"] == "link:calc.py" and len(snapshot.files["calc.py"]) == 64
    assert snapshot.config == {"pytest.ini": b"[pytest]\naddopts = -q\n"}
    assert set(snapshot.test_files()) == {"test_calc.py", "sub/x_test.py"}


@pytest.mark.usefixtures("child_processes")
def test_a_hanging_test_run_is_not_done(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(60)\n")
    result = check_done(tmp_path, take_snapshot(tmp_path), strict=False, trust_planted=True, timeout=1)
    assert not result.passed and result.pytest_exit is None
    assert "timed out" in result.summary
