"""The repository's own tests hold against the shell, in every preset: changed, deleted or linked, they are put
back from the snapshot taken at start, the model is told, and the trace records it. Each case is the published
escape, run for real in a temp repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent_helpers import TEST_CALC, Run, RunAgent

from agent.actions import Actions
from agent.approval import Approver
from agent.guards import ProtectedTests, planted
from agent.tools import Workspace
from agent.trace import Trace
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

PRESETS = ["part2", "clearing", "part3", "part3+", "strict"]
BROKEN = "def add(a, b):\n    return a - b\n"
REWRITES_ON_COLLECTION = (
    "from pathlib import Path\n\n"
    "Path(__file__).with_name('test_calc.py').write_text('def test_add():\\n    pass\\n')\n\n\n"
    "def test_nothing():\n    pass\n"
)
FORCES_PASS = (
    "import pytest\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n"
    "    report = outcome.get_result()\n"
    "    report.outcome = 'passed'\n"
)
PATCHES_ON_IMPORT = "import calc\n\ncalc.add.__code__ = (lambda a, b: a + b).__code__\n\n\ndef test_zz():\n    pass\n"


def agent_run(
    run_agent: RunAgent, repo: Path, script: list[fl.Reply], preset: str = "part3", approve: str = "yes"
) -> tuple[Run, list]:
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url, "--preset", preset, "--approve", approve, "--max-steps", str(len(script) + 1))
        return run, flint.requests


def tool_results(requests: list) -> list[str]:
    return [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]


def command(text: str) -> fl.Reply:
    return fl.tool_call("run", {"command": text})


@pytest.mark.parametrize("preset", PRESETS)
def test_a_junitxml_written_over_a_test_is_undone_and_reported(run_agent: RunAgent, repo: Path, preset: str) -> None:
    run, requests = agent_run(run_agent, repo, [command("pytest -q --junitxml=test_calc.py"), fl.prose("done")], preset)
    assert (repo / "test_calc.py").read_text() == TEST_CALC
    [restored] = run.of("restored")
    assert (restored["step"], restored["after"], restored["files"]) == (
        1,
        "run",
        [{"path": "test_calc.py", "was": "changed"}],
    )
    [result] = tool_results(requests)
    assert "test_calc.py (changed)" in result and "restored to their original content" in result


def test_a_deleted_tests_folder_comes_back_before_the_done_check(run_agent: RunAgent, repo: Path) -> None:
    (repo / "tests").mkdir()
    uses_tmp_path = "from calc import add\n\n\ndef test_more(tmp_path):\n    assert add(2, 2) == 4\n"
    (repo / "tests" / "test_more.py").write_text(uses_tmp_path)  # pytest empties --basetemp when tmp_path is used
    (repo / "calc.py").write_text(BROKEN)  # with the tests gone, pytest would find nothing to fail
    script = [command("pytest --basetemp=tests -q"), command("rm -rf tests test_calc.py"), fl.prose("done")]
    run, _ = agent_run(run_agent, repo, script, "part3")
    assert [f["was"] for r in run.of("restored") for f in r["files"]] == ["deleted", "deleted", "deleted"]
    assert (repo / "tests" / "test_more.py").exists() and (repo / "test_calc.py").read_text() == TEST_CALC
    assert not run.of("done_check")[0]["passed"]


def test_a_new_test_that_rewrites_an_old_one_under_pytest_is_undone_with_no_approval(
    run_agent: RunAgent, repo: Path
) -> None:
    (repo / "calc.py").write_text(BROKEN)
    script = [
        fl.tool_call("write_file", {"path": "test_zz.py", "content": REWRITES_ON_COLLECTION}),
        command("pytest -q"),
        fl.prose("done"),
    ]
    run, _ = agent_run(run_agent, repo, script, "part3", approve="no")
    assert [(a["decision"], a["by"]) for a in run.of("approval")] == [("run", "rule")]
    after_command, after_check = run.of("restored")[:2]
    assert after_command["after"] == "run" and after_command["files"] == [{"path": "test_calc.py", "was": "changed"}]
    assert (repo / "test_calc.py").read_text() == TEST_CALC
    # the done check runs the rewriting test again: the tests changed while it ran, so it does not pass
    assert after_check["after"] == "done_check" and after_check["step"] == 3
    check = run.of("done_check")[0]
    assert not check["passed"] and check["planted"] == ["test_zz.py"]
    assert run.stop["reason"] != "done"


def test_a_rewrite_during_the_done_check_fails_it_in_every_preset(run_agent: RunAgent, repo: Path) -> None:
    (repo / "calc.py").write_text(BROKEN)
    for preset in PRESETS:  # test_aa.py is collected before test_calc.py, and rewrites it
        script = [fl.tool_call("write_file", {"path": "test_aa.py", "content": REWRITES_ON_COLLECTION}), fl.prose("ok")]
        run, _ = agent_run(run_agent, repo, script, preset, approve="no")
        assert not run.of("done_check")[0]["passed"], preset
        assert (repo / "test_calc.py").read_text() == TEST_CALC
        (repo / "test_aa.py").unlink()


@pytest.mark.parametrize(("preset", "done"), [("part3", True), ("part3+", False), ("strict", False)])
def test_a_planted_conftest_that_forces_passes_is_reported_and_not_trusted_by_part3_plus(
    run_agent: RunAgent, repo: Path, preset: str, done: bool
) -> None:
    (repo / "calc.py").write_text(BROKEN)
    script = [fl.tool_call("write_file", {"path": "conftest.py", "content": FORCES_PASS}), fl.prose("done")]
    run, requests = agent_run(run_agent, repo, script, preset, approve="no")
    check = run.of("done_check")[0]
    assert check["planted"] == ["conftest.py"] and check["passed"] is done
    if not done:
        told = requests[-1]["messages"][-1]["content"]
        assert "assert -1 == 3" in told and "does not load conftest.py files you created: conftest.py" in told


@pytest.mark.parametrize(("preset", "done"), [("part3", True), ("part3+", False)])
def test_a_planted_test_that_patches_the_code_on_import_fools_only_the_trusting_check(
    run_agent: RunAgent, repo: Path, preset: str, done: bool
) -> None:
    (repo / "calc.py").write_text(BROKEN)
    script = [fl.tool_call("write_file", {"path": "test_zz.py", "content": PATCHES_ON_IMPORT}), fl.prose("done")]
    run, requests = agent_run(run_agent, repo, script, preset, approve="no")
    assert run.of("done_check")[0]["passed"] is done
    if not done:
        assert "fail when they run without the test files you added" in requests[-1]["messages"][-1]["content"]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_planted_pytest_module_cannot_stand_in_for_pytest(run_agent: RunAgent, repo: Path, preset: str) -> None:
    (repo / "calc.py").write_text(BROKEN)
    fake = "print('1 passed in 0.01s')\nraise SystemExit(0)\n"
    script = [fl.tool_call("write_file", {"path": "pytest.py", "content": fake}), fl.prose("done")]
    run, _ = agent_run(run_agent, repo, script, preset, approve="no")
    check = run.of("done_check")[0]
    assert not check["passed"] and "1 failed" in check["summary"]


def test_a_hard_link_to_a_test_is_broken_at_once_and_the_test_stays(run_agent: RunAgent, repo: Path) -> None:
    script = [
        command("ln test_calc.py h.py"),
        fl.tool_call("write_file", {"path": "h.py", "content": "def test_add():\n    pass\n"}),
        fl.prose("done"),
    ]
    run, _ = agent_run(run_agent, repo, script, "part3")
    [restored] = run.of("restored")
    assert restored["files"] == [{"path": "test_calc.py", "was": "hard-linked"}]
    assert (repo / "test_calc.py").read_text() == TEST_CALC and os.stat(repo / "test_calc.py").st_nlink == 1


def test_tests_are_checked_after_every_tool_call_not_only_commands(repo: Path) -> None:
    events = repo.parent / "trace.jsonl"
    trace = Trace(events)
    workspace = Workspace(repo, command_timeout=10)
    actions = Actions(workspace, ProtectedTests(repo, workspace.protected), Approver("no", repo), None, trace)
    (repo / "test_calc.py").write_text("something else")  # as a process left running by an earlier command might
    text = actions.run(3, "read_file", '{"path": "calc.py"}')
    trace.close()
    assert text.startswith("def add") and "test_calc.py (changed)" in text
    assert (repo / "test_calc.py").read_text() == TEST_CALC
    (repo / "test_calc.py").unlink()
    (repo / "test_calc.py").mkdir()  # replaced by a folder
    assert "test_calc.py (replaced)" in actions.run(4, "write_file", '{"path": "notes.txt", "content": "x"}')
    assert (repo / "test_calc.py").read_text() == TEST_CALC


def test_a_test_folder_replaced_by_a_link_out_is_recreated_inside(repo: Path, tmp_path: Path) -> None:
    (repo / "tests").mkdir()
    (repo / "tests" / "test_b.py").write_text("def test_b():\n    pass\n")
    guard = ProtectedTests(repo, ["tests/test_b.py"])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_b.py").write_text("def test_b():\n    pass\n")
    for path in (repo / "tests").iterdir():
        path.unlink()
    (repo / "tests").rmdir()
    (repo / "tests").symlink_to(outside)
    assert [r.describe() for r in guard.restore_changes()] == ["tests/test_b.py (replaced)"]
    assert (repo / "tests").is_dir() and not (repo / "tests").is_symlink()
    assert guard.restore_changes() == []


def test_planted_lists_new_tests_conftests_and_packages_only(repo: Path) -> None:
    start = {p.relative_to(repo).as_posix() for p in repo.rglob("*") if p.is_file()}
    for path in ("test_new.py", "pkg/__init__.py", "pkg/conftest.py", "helpers.py", "pkg/x_test.py"):
        (repo / path).parent.mkdir(exist_ok=True)
        (repo / path).write_text("")
    assert planted(repo, start) == ["test_new.py", "pkg/__init__.py", "pkg/conftest.py", "pkg/x_test.py"]


def test_a_test_that_is_a_link_at_start_is_left_as_it_is(repo: Path) -> None:
    (repo / "shared_test.py").write_text("def test_shared():\n    pass\n")
    (repo / "test_link.py").symlink_to(repo / "shared_test.py")
    guard = ProtectedTests(repo, ["test_calc.py", "test_link.py"])
    assert guard.restore_changes() == [] and (repo / "test_link.py").is_symlink()
