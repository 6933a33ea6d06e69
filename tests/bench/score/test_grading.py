"""The scorer is honest: doing nothing scores what the untouched code earns, the solution full marks, and no planted
file or edited test gains a point.

Every test grades a real diff made the way the bench makes it (a one-commit work copy, an edit, capture_diff) with
the real LocalGrader, i.e. a real pytest subprocess. todo_repo (untouched 2/6, its hidden tests run its program) is
graded where its scores or its program are what is checked; the attacks on pytest's configuration, the planted files
and what a diff counts are graded on the suite's small task, calc (tests/small_task.py: untouched 1/3, library-style),
whose grading is one pytest where todo_repo's starts `todo.py` about a hundred times (2.1 s against 0.4 s here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import small_task

from bench import ROOT
from bench.errors import ScoringError
from bench.fixtures.fixture import Fixture, load_fixture
from bench.fixtures.workcopy import capture_diff, make_work_copy, solution_diff
from bench.results.row import ResultRow
from bench.score import canaries
from bench.score.graders import LocalGrader, run_pytest
from bench.score.grading import Score, score_diff, score_run_dir
from bench.score.junit import parse_junit
from bench.score.score_command import ScoreOptions, command
from bench.score.sessions import BASE_ARGS, GRADING_DIR, INI_FILE, INI_TEXT

HIDDEN_DUE = "test_hidden_due_dates.py"
HIDDEN_REGRESSIONS = "test_hidden_regressions.py"
# What the untouched calc earns: hidden tests passed and run, visible tests passed; and the hidden tests it fails.
CALC_UNTOUCHED = tuple(int(n) for n in small_task.UNTOUCHED)
CALC_FAILED = CALC_UNTOUCHED[1] - CALC_UNTOUCHED[0]

ALWAYS_PASS_VISIBLE = """
def test_add():
    pass  # always passes
"""

FORCE_PASS_CONFTEST = """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
"""

DESELECT_NEW = small_task.DESELECT_NEW


def csv(score: Score) -> dict[str, str]:
    """The results row a score fills, as the CSV holds it."""
    row = ResultRow()
    score.fill(row)
    return row.cells()


def agent_diff(fx: Fixture, tmp_path: Path, edit: Callable[[Path], None]) -> str:
    """What an agent that made `edit` in its copy would hand in."""
    repo = tmp_path / "agent"
    base = make_work_copy(fx, repo)
    edit(repo)
    return capture_diff(repo, base)


def grade(fx: Fixture, tmp_path: Path, diff: str, timeout_s: float = 120) -> Score:
    return score_diff(fx, diff, LocalGrader(), tmp_path / "work", timeout_s=timeout_s)


def write(relative: str, text: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)

    return edit


def both(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        for one in edits:
            one(repo)

    return edit


def break_adding(repo: Path) -> None:
    """An agent change that breaks the visible test: add subtracts."""
    code = repo / small_task.CODE
    code.write_text(code.read_text().replace("return a + b", "return a - b"))


@pytest.mark.usefixtures("child_processes")
def test_an_untouched_copy_scores_what_the_original_code_earns(todo: Fixture, tmp_path: Path) -> None:
    score = grade(todo, tmp_path, agent_diff(todo, tmp_path, lambda repo: None))

    assert (score.hidden_passed, score.hidden_total) == (2, 6)
    assert (score.visible_passed, score.visible_total) == (3, 3)
    assert (score.files_changed, score.tests_added, score.error) == (0, 0, None)
    passed = sorted(test_id for test_id, outcome in score.outcomes.items() if outcome == "passed")
    assert [test_id.split("::")[0] for test_id in passed] == [HIDDEN_REGRESSIONS] * 2 + ["test_todo.py"] * 3
    assert sum(outcome == "failed" for outcome in score.outcomes.values()) == 4


@pytest.mark.usefixtures("child_processes")
def test_the_reference_solution_scores_full_marks(todo: Fixture, tmp_path: Path) -> None:
    score = grade(todo, tmp_path, solution_diff(todo, tmp_path / "solution"))

    assert (score.hidden_passed, score.visible_passed, score.visible_total) == (6, 3, 3)
    assert score.changed_paths == ["test_due.py", "todo.py"]
    assert score.files_changed == 1
    assert score.tests_added == 5  # five test functions; the parametrized one counts once
    assert score.error is None
    assert score.visible_tests_modified == []


@pytest.mark.usefixtures("child_processes")
def test_editing_a_visible_test_gains_nothing_and_is_reported(calc: Fixture, tmp_path: Path) -> None:
    visible = small_task.VISIBLE_TEST
    diff = agent_diff(calc, tmp_path, both(break_adding, write(visible, ALWAYS_PASS_VISIBLE)))

    score = grade(calc, tmp_path, diff)

    assert score.visible_tests_modified == [visible]
    assert score.error is not None and visible in score.error
    assert csv(score)["visible_tests_modified"] == visible
    # The original visible test ran against the broken add, so it fails.
    assert (score.visible_passed, score.visible_total) == (0, 1)


@pytest.mark.usefixtures("child_processes")
def test_a_file_named_like_a_hidden_test_is_overwritten(calc: Fixture, tmp_path: Path) -> None:
    fake = "".join(f"def test_fake_{i}():\n    assert {i} >= 0\n\n" for i in range(6))

    score = grade(calc, tmp_path, agent_diff(calc, tmp_path, write(small_task.HIDDEN_TEST, fake)))

    assert score.hidden_passed == CALC_UNTOUCHED[0]
    assert not any("test_fake" in test_id for test_id in score.outcomes)
    assert score.tests_added == 6  # they are tests the agent wrote, even if they never reach the grade


ATTACKS = {
    "conftest forcing passes": write("conftest.py", FORCE_PASS_CONFTEST),
    "conftest in a subfolder": both(write("pkg/conftest.py", FORCE_PASS_CONFTEST), write("pkg/__init__.py", "")),
    "pytest.ini deselecting": write("pytest.ini", f"[pytest]\naddopts = {DESELECT_NEW}\n"),
    "pyproject deselecting": write("pyproject.toml", f'[tool.pytest.ini_options]\naddopts = "{DESELECT_NEW}"\n'),
    "setup.cfg deselecting": write("setup.cfg", f"[tool:pytest]\naddopts = {DESELECT_NEW}\n"),
    "tox.ini deselecting": write("tox.ini", f"[pytest]\naddopts = {DESELECT_NEW}\n"),
    "sitecustomize": write("sitecustomize.py", "import os\nos.environ['PYTEST_ADDOPTS'] = \"-k add\"\n"),
    "usercustomize": write("usercustomize.py", "import sys\nsys.exit(0)\n"),
}


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_planted_test_configuration_gains_nothing(
    calc: Fixture, tmp_path: Path, attack: Callable[[Path], None]
) -> None:
    score = grade(calc, tmp_path, agent_diff(calc, tmp_path, attack))

    assert (score.hidden_passed, score.hidden_total, score.visible_passed) == CALC_UNTOUCHED
    assert sum(outcome == "failed" for outcome in score.outcomes.values()) == CALC_FAILED


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("attack", ["conftest forcing passes", "pytest.ini deselecting", "pyproject deselecting"])
def test_the_planted_configuration_would_work_on_a_naive_grader(calc: Fixture, tmp_path: Path, attack: str) -> None:
    """The control for the test above: a plain `pytest` in the agent's copy plus hidden tests reports no failure."""
    repo = tmp_path / "naive"
    make_work_copy(calc, repo)
    ATTACKS[attack](repo)
    for hidden in calc.hidden_test_files:
        shutil.copy(hidden, repo)

    naive = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo, capture_output=True
    )

    assert naive.returncode == 0, naive.stdout.decode()[-500:]


@pytest.mark.usefixtures("child_processes")
def test_code_run_while_counting_tests_cannot_rewrite_the_grading_setup(calc: Fixture, tmp_path: Path) -> None:
    """Counting tests_added imports the agent's test files; what they plant then is swept before grading."""
    sneaky = (
        "from pathlib import Path\n"
        f"Path('.bench-grading/pytest.ini').write_text(\"[pytest]\\naddopts = {DESELECT_NEW}\\n\")\n"
        f"Path('conftest.py').write_text({FORCE_PASS_CONFTEST!r})\n\n"
        "def test_mine():\n    pass\n"
    )

    score = grade(calc, tmp_path, agent_diff(calc, tmp_path, write("test_sneaky.py", sneaky)))

    assert score.tests_added == 1
    assert (score.hidden_passed, score.hidden_total, score.visible_passed) == CALC_UNTOUCHED
    assert sum(outcome == "failed" for outcome in score.outcomes.values()) == CALC_FAILED


@pytest.mark.usefixtures("child_processes")
def test_planted_start_up_files_are_deleted_and_reported(calc: Fixture, tmp_path: Path) -> None:
    diff = agent_diff(calc, tmp_path, both(ATTACKS["conftest in a subfolder"], ATTACKS["sitecustomize"]))

    score = grade(calc, tmp_path, diff)

    assert score.error is not None
    assert "pkg/conftest.py" in score.error and "sitecustomize.py" in score.error


@pytest.mark.usefixtures("child_processes")
def test_a_symlink_to_code_outside_the_copy_is_not_followed(calc: Fixture, tmp_path: Path) -> None:
    """Locally, an agent could point its code at the solution on disk; the grading copy drops such links."""
    code = small_task.CODE

    def link_to_solution(repo: Path) -> None:
        (repo / code).unlink()
        (repo / code).symlink_to(calc.solution_dir / code)

    score = grade(calc, tmp_path, agent_diff(calc, tmp_path, link_to_solution))

    assert score.hidden_passed == 0
    assert score.error is not None and code in score.error


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(
    "diff",
    [
        "this is not a diff\n",
        "--- a/todo.py\n+++ b/todo.py\n@@ -1,1 +1,1 @@\n-no such line in todo.py\n+something else\n",
    ],
    ids=["garbage", "wrong base"],
)
def test_a_diff_that_does_not_apply_is_an_error_not_an_exception(todo: Fixture, tmp_path: Path, diff: str) -> None:
    score = grade(todo, tmp_path, diff)

    assert score.error is not None and "does not apply" in score.error
    assert (score.hidden_passed, score.visible_passed, score.tests_added) == (None, None, None)
    assert csv(score)["hidden_passed"] == "" and csv(score)["hidden_total"] == "6"


@pytest.mark.usefixtures("child_processes")
def test_tests_added_counts_new_functions_once_each(calc: Fixture, tmp_path: Path) -> None:
    new_tests = (
        "import pytest\n\n"
        "def test_one():\n    pass\n\n"
        "@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_many(n):\n    pass\n\n"
        "class TestGroup:\n    def test_in_class(self):\n        pass\n\n"
        "def helper():\n    pass\n"
    )
    diff = agent_diff(calc, tmp_path, both(write("test_new.py", new_tests), write("notes.txt", "x\n")))

    score = grade(calc, tmp_path, diff)

    assert score.tests_added == 3
    assert score.files_changed == 1  # notes.txt; test_new.py is a test file


@pytest.mark.usefixtures("child_processes")
def test_tests_added_subtracts_functions_an_existing_test_file_had(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(small_task.ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    present = "from calc import add\n\ndef test_present():\n    assert callable(add)\n"
    (root / f"fixtures/{small_task.NAME}/test_extra.py").write_text(present)
    fx = load_fixture(small_task.NAME, root)
    added = present + (
        "\ndef test_new_one():\n    assert add.__name__ == 'add'\n\ndef test_new_two():\n    assert add(1, 1) == 2\n"
    )

    score = grade(fx, tmp_path, agent_diff(fx, tmp_path, write("test_extra.py", added)))

    assert score.tests_added == 2


@pytest.mark.usefixtures("child_processes")
def test_code_that_breaks_collection_scores_a_measured_zero(todo: Fixture, tmp_path: Path) -> None:
    score = grade(todo, tmp_path, agent_diff(todo, tmp_path, write("todo.py", "def broken(:\n")))

    assert (score.hidden_passed, score.visible_passed) == (0, 0)
    assert csv(score)["hidden_passed"] == "0"
    # The hidden tests run the program, so all six ran (and failed); the visible ones import it and did not collect.
    assert sum(test_id.startswith(HIDDEN_DUE) for test_id in score.outcomes) == 4
    assert score.error is not None and "failed to collect: test_todo.py" in score.error


@pytest.mark.usefixtures("child_processes")
def test_a_hanging_test_run_times_out_with_its_tests_failed_and_flagged(calc: Fixture, tmp_path: Path) -> None:
    """A hang is no way to turn a failing grade into "not measured": the tests not reported count as failed."""
    hang = write(small_task.CODE, "import time\ntime.sleep(600)\n")

    score = grade(calc, tmp_path, agent_diff(calc, tmp_path, hang), timeout_s=2)

    assert score.grading_tampered and score.error is not None and "timed out" in score.error
    assert (score.hidden_passed, score.visible_passed) == (0, 0)


@pytest.mark.usefixtures("child_processes")
def test_local_grader_ignores_the_callers_pytest_and_python_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"open({str(tmp_path / 'marker')!r}, 'w').close()\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nothing_matches")

    run = run_pytest(LocalGrader(), tmp_path, ["-q", "-p", "no:cacheprovider", "test_one.py"], 60)

    assert (run.exit_code, run.timed_out) == (0, False)
    assert "1 passed" in run.output
    assert not (tmp_path / "marker").exists()
    assert not list(tmp_path.rglob("*.pyc"))


@pytest.mark.usefixtures("child_processes")
def test_the_grading_arguments_alone_shut_out_a_conftest(tmp_path: Path) -> None:
    """A second line of defence: even a conftest.py that survived deletion is not loaded."""
    (tmp_path / "test_fails.py").write_text("def test_fails():\n    assert False\n")
    (tmp_path / "conftest.py").write_text(FORCE_PASS_CONFTEST)
    (tmp_path / GRADING_DIR).mkdir()
    (tmp_path / INI_FILE).write_text(INI_TEXT)

    run = run_pytest(LocalGrader(), tmp_path, [*BASE_ARGS, "--rootdir=.", "-q", "test_fails.py"], 60)

    assert run.exit_code == 1
    assert "1 failed" in run.output


def test_parse_junit_keys_outcomes_by_file_class_and_test() -> None:
    xml = (
        "<testsuites><testsuite>"
        '<testcase classname="" name="sub.test_broken"><error message="collection failure"/></testcase>'
        '<testcase classname="test_a" name="test_ok"/>'
        '<testcase classname="test_a" name="test_teardown"/>'
        '<testcase classname="test_a" name="test_teardown"><error message="teardown"/></testcase>'
        '<testcase classname="test_a.TestK" name="test_k[1.5]"><failure/></testcase>'
        '<testcase classname="sub.test_c" name="test_s"><skipped/></testcase>'
        '<testcase classname="elsewhere" name="test_x"/>'
        "</testsuite></testsuites>"
    )

    outcomes = parse_junit(xml, ["test_a.py", "sub/test_c.py", "sub/test_broken.py"])

    assert outcomes == {
        "sub/test_broken.py": "error",
        "test_a.py::test_ok": "passed",
        "test_a.py::test_teardown": "error",
        "test_a.py::TestK::test_k[1.5]": "failed",
        "sub/test_c.py::test_s": "skipped",
    }


@pytest.mark.usefixtures("child_processes")
def test_a_rename_counts_both_paths(calc: Fixture, tmp_path: Path) -> None:
    """capture_diff never writes renames, but a diff from elsewhere (git diff -M) may."""
    repo = tmp_path / "agent"
    make_work_copy(calc, repo)
    subprocess.run(["git", "mv", "TASK.md", "NOTES.md"], cwd=repo, check=True)
    diff = subprocess.run(["git", "diff", "--cached", "-M"], cwd=repo, check=True, capture_output=True, text=True)
    assert "rename from TASK.md" in diff.stdout

    score = grade(calc, tmp_path, diff.stdout)

    assert score.changed_paths == ["NOTES.md", "TASK.md"]
    assert (score.files_changed, score.hidden_passed) == (2, CALC_UNTOUCHED[0])


def test_fill_keeps_a_measured_zero_apart_from_not_measured() -> None:
    row = csv(Score(fixture="todo_repo", hidden_total=6, hidden_passed=0, tests_added=None))

    assert row["hidden_passed"] == "0"
    assert row["tests_added"] == ""
    assert row["visible_tests_modified"] == ""


def run_dir_with(tmp_path: Path, fx: Fixture, diff: str) -> Path:
    run_dir = tmp_path / "runs" / "run-1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"fixture": fx.name}))
    (run_dir / "diff.patch").write_text(diff)
    return run_dir


@pytest.mark.usefixtures("child_processes")
def test_score_run_dir_writes_junit_and_score_json(calc: Fixture, tmp_path: Path) -> None:
    run_dir = run_dir_with(tmp_path, calc, solution_diff(calc, tmp_path / "solution"))

    score = score_run_dir(run_dir, LocalGrader(), checkout=ROOT, root=small_task.ROOT)

    saved = json.loads((run_dir / "score.json").read_text())
    assert (saved["hidden_passed"], saved["hidden_total"], score.hidden_passed) == (3, 3, 3)
    assert "junit_reports" not in saved
    # A library-style task's one session (bench/score/sessions.py): the three hidden tests and the visible one, each
    # with its mutants, and the canary file's two.
    report = (run_dir / "junit.xml").read_text()
    assert report.count("<testcase") == (3 + 1) * (1 + canaries.MUTANTS_PER_TEST) + 2
    assert 'classname="test_calc" name="test_add"' in report


def test_score_run_dir_without_a_diff_is_a_scoring_error(todo: Fixture, tmp_path: Path) -> None:
    run_dir = run_dir_with(tmp_path, todo, "")
    (run_dir / "diff.patch").unlink()

    with pytest.raises(ScoringError, match="diff.patch"):
        score_run_dir(run_dir, LocalGrader(), checkout=ROOT)


@pytest.mark.usefixtures("child_processes")
def test_score_command_prints_the_score(calc: Fixture, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = run_dir_with(tmp_path, calc, "")

    status = command(ScoreOptions(sandbox="local", run_dir=run_dir, fixtures_root=str(small_task.ROOT)), ROOT)

    out = capsys.readouterr().out
    hidden, total, visible = small_task.UNTOUCHED
    assert status == 0
    assert f"hidden tests   {hidden} of {total} passed" in out and f"visible tests  {visible} of 1 passed" in out


@pytest.mark.docker
@pytest.mark.slow
def test_the_docker_grader_gives_the_same_scores(todo: Fixture, tmp_path: Path) -> None:
    """The lead's DockerGrader runs our pytest arguments in the sandbox image (whatever pytest >= 7 it holds)."""
    from bench.containers.engine import docker_client
    from bench.containers.images import ensure_sandbox_image
    from bench.score.graders import DockerGrader

    client = docker_client()
    grader = DockerGrader(client, ensure_sandbox_image(client, ROOT))
    planted = agent_diff(todo, tmp_path / "planted", ATTACKS["conftest forcing passes"])
    solved = solution_diff(todo, tmp_path / "solution")

    scores = [score_diff(todo, diff, grader, tmp_path / f"work{i}") for i, diff in enumerate(["", planted, solved])]

    assert [(s.hidden_passed, s.visible_passed, s.visible_total) for s in scores] == [(2, 3, 3), (2, 3, 3), (6, 3, 3)]
    assert scores[2].tests_added == 5
