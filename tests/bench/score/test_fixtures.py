"""fixture.yaml validation, fixture hashing, the agent's one-commit copy, capture_diff, and `bench fixtures check`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import small_task
import yaml

from bench import ROOT
from bench.config import BenchConfig
from bench.errors import FixtureError
from bench.fixtures.fixture import fixture_hash, list_fixtures, load_fixture
from bench.fixtures.workcopy import COMMIT_MESSAGE, GitKilled, capture_diff, make_work_copy, run_git
from bench.score.check import check_fixture, command


def copy_tree(root: Path) -> Path:
    """A private copy of todo_repo and its hidden tests, laid out like the repository, to break at will."""
    source = load_fixture("todo_repo", ROOT)
    shutil.copytree(source.path, root / "fixtures/todo_repo", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(source.hidden_dir, root / "hidden_tests/todo_repo", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def edit_yaml(root: Path, **changes: object) -> None:
    file = root / "fixtures/todo_repo/fixture.yaml"
    data = yaml.safe_load(file.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    file.write_text(yaml.safe_dump(data))


def git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "safe.directory=*", *args]
    return subprocess.run(command, cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return copy_tree(tmp_path / "tree")


@pytest.fixture
def calc_tree(tmp_path: Path) -> Path:
    """A private copy of the suite's small task (tests/small_task.py) to break at will: the broken-tree checks are
    about `bench fixtures check`'s reasons, which a grading of one pytest shows as well as todo_repo's hundred runs
    of its program (test_fixtures_check_passes_for_todo_repo grades the shipped fixture for real)."""
    root = tmp_path / "calc-tree"
    shutil.copytree(small_task.ROOT, root, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    return root


def edit_calc_yaml(root: Path, **changes: object) -> None:
    file = root / f"fixtures/{small_task.NAME}/fixture.yaml"
    file.write_text(yaml.safe_dump({**yaml.safe_load(file.read_text()), **changes}))


def test_todo_repo_loads_with_its_declared_counts() -> None:
    fx = load_fixture("todo_repo", ROOT)

    assert (fx.hidden_total, fx.expected_hidden_passing, fx.max_steps) == (6, 2, 30)
    assert fx.task_file == Path("TASK.md") and fx.visible_tests == ["test_todo.py"]
    assert [p.name for p in fx.hidden_test_files] == ["test_hidden_due_dates.py", "test_hidden_regressions.py"]
    assert "todo_repo" in list_fixtures(ROOT)


def test_unknown_fixture_names_the_available_ones(tree: Path) -> None:
    with pytest.raises(FixtureError, match=r"unknown fixture 'nope'.*available: todo_repo"):
        load_fixture("nope", tree)


def test_list_fixtures_skips_folders_without_fixture_yaml(tree: Path) -> None:
    (tree / "fixtures/scratch").mkdir()

    assert list_fixtures(tree) == ["todo_repo"]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"timeout": 5}, "unknown key(s) timeout; allowed: task_file, hidden_tests"),
        ({"hidden_total": None}, "hidden_total is missing"),
        ({"hidden_total": "6"}, "hidden_total = '6' is not allowed: input should be a valid integer"),
        ({"max_steps": True}, "max_steps = True is not allowed: input should be a valid integer"),
        (
            {"visible_tests": "test_todo.py"},
            "visible_tests = 'test_todo.py' is not allowed: input should be a valid list",
        ),
        ({"visible_tests": [""]}, "list of file names"),
        ({"solution_adds_tests": "no"}, "solution_adds_tests = 'no' is not allowed: input should be a valid boolean"),
        ({"expected_visible_passing": -1}, "expected_visible_passing = -1 is not allowed: input should be greater"),
        ({"grading": "both"}, "grading = 'both' is not allowed: input should be 'library' or 'program'"),
        ({"expected_hidden_passing": 7}, "between 0 and hidden_total"),
        ({"max_steps": 0}, "max_steps = 0 is not allowed: input should be greater than or equal to 1"),
        ({"task_file": "MISSING.md"}, "MISSING.md is not a file"),
        ({"task_file": "../../hidden_tests/todo_repo/test_hidden_due_dates.py"}, "is not a file inside"),
        ({"visible_tests": ["test_todo.py", "test_gone.py"]}, "test_gone.py is not a file"),
        ({"hidden_tests": "hidden_tests/elsewhere"}, "does not exist"),
    ],
)
def test_fixture_yaml_is_validated_strictly(tree: Path, changes: dict[str, object], message: str) -> None:
    edit_yaml(tree, **changes)

    with pytest.raises(FixtureError, match="fixture todo_repo") as error:
        load_fixture("todo_repo", tree)

    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_hidden_folder_without_tests_is_rejected(tree: Path) -> None:
    for test in (tree / "hidden_tests/todo_repo").glob("test_*.py"):
        test.unlink()

    with pytest.raises(FixtureError, match=r"no hidden test files \(test_\*.py or \*_test.py\)"):
        load_fixture("todo_repo", tree)


def test_fixture_hash_follows_every_input_but_not_caches(tree: Path) -> None:
    before = fixture_hash(load_fixture("todo_repo", tree))
    (tree / "fixtures/todo_repo/__pycache__").mkdir()
    (tree / "fixtures/todo_repo/__pycache__/todo.cpython-311.pyc").write_bytes(b"\0")
    assert fixture_hash(load_fixture("todo_repo", tree)) == before

    hidden = tree / "hidden_tests/todo_repo/test_hidden_due_dates.py"
    hidden.write_text(hidden.read_text() + "\n# changed\n")
    after_hidden = fixture_hash(load_fixture("todo_repo", tree))
    solution = tree / "hidden_tests/todo_repo/solution/todo.py"
    solution.write_text(solution.read_text() + "\n# changed\n")
    after_solution = fixture_hash(load_fixture("todo_repo", tree))

    assert len({before, after_hidden, after_solution}) == 3


@pytest.mark.usefixtures("child_processes")
def test_work_copy_is_one_anonymous_commit_without_fixture_yaml(tmp_path: Path) -> None:
    fx = load_fixture("todo_repo", ROOT)

    sha = make_work_copy(fx, tmp_path / "a")

    log = git(tmp_path / "a", "log", "--format=%an <%ae>|%cn <%ce>|%ad|%s", "--date=iso-strict").splitlines()
    assert log == [f"bench <bench@localhost>|bench <bench@localhost>|2000-01-01T00:00:00+00:00|{COMMIT_MESSAGE}"]
    assert git(tmp_path / "a", "rev-parse", "HEAD").strip() == sha
    tracked = git(tmp_path / "a", "ls-files").split()
    assert "fixture.yaml" not in tracked and {"todo.py", "test_todo.py", "TASK.md"} <= set(tracked)
    assert not (tmp_path / "a/fixture.yaml").exists()
    assert git(tmp_path / "a", "status", "--porcelain") == ""
    assert make_work_copy(fx, tmp_path / "b") == sha  # nothing about time or place leaks into the commit


@pytest.mark.usefixtures("child_processes")
def test_capture_diff_has_new_changed_and_deleted_files_but_no_caches(tmp_path: Path) -> None:
    repo = tmp_path / "agent"
    base = make_work_copy(load_fixture("todo_repo", ROOT), repo)
    (repo / "todo.py").write_text((repo / "todo.py").read_text() + "\n# agent was here\n")
    (repo / "README.md").unlink()
    (repo / "pkg").mkdir()
    (repo / "pkg/new_module.py").write_text("X = 1\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__/todo.cpython-311.pyc").write_bytes(b"\0\1")
    (repo / "todo.json").write_text("{}")  # the fixture's .gitignore names it: a by-product of trying the app

    diff = capture_diff(repo, base)

    headers = [line for line in diff.splitlines() if line.startswith("diff --git")]
    assert headers == [
        "diff --git a/README.md b/README.md",
        "diff --git a/pkg/new_module.py b/pkg/new_module.py",
        "diff --git a/todo.py b/todo.py",
    ]
    assert "+# agent was here" in diff and "deleted file mode" in diff


@pytest.mark.usefixtures("child_processes")
def test_capture_diff_leaves_the_agents_index_and_config_alone(tmp_path: Path) -> None:
    repo = tmp_path / "agent"
    base = make_work_copy(load_fixture("todo_repo", ROOT), repo)
    marker = tmp_path / "filter-ran"
    # A clean filter in the agent's .git/config would run on `git add` if we used the agent's repository.
    git(repo, "config", "filter.evil.clean", f"touch {marker}; cat")
    (repo / ".gitattributes").write_text("*.py filter=evil\n")
    (repo / "staged.py").write_text("A = 1\n")
    git(repo, "add", "staged.py")
    (repo / "todo.py").write_text("# rewritten\n")
    marker.unlink(missing_ok=True)
    index_before = (repo / ".git/index").read_bytes()

    diff = capture_diff(repo, base)

    assert not marker.exists()
    assert (repo / ".git/index").read_bytes() == index_before
    assert git(repo, "diff", "--cached", "--name-only").split() == ["staged.py"]
    assert "+# rewritten" in diff and "b/staged.py" in diff and "b/.gitattributes" in diff


@pytest.mark.usefixtures("child_processes")
def test_capture_diff_without_a_repository_says_so(tmp_path: Path) -> None:
    repo = tmp_path / "agent"
    base = make_work_copy(load_fixture("todo_repo", ROOT), repo)
    shutil.rmtree(repo / ".git")

    with pytest.raises(FixtureError, match="lost its repository"):
        capture_diff(repo, base)


@pytest.mark.usefixtures("child_processes")
def test_a_git_ended_by_a_signal_is_named_apart_from_a_repository_that_fails(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x\n")
    run_git(tmp_path, "init", "-q")
    # a shell alias runs under git: the signal it sends its parent ends git as a job's stop would
    with pytest.raises(GitKilled, match="git -c was ended by SIGTERM"):
        run_git(tmp_path, "-c", "alias.stop=!kill -TERM $PPID", "stop")
    with pytest.raises(FixtureError, match="failed in") as failed:
        run_git(tmp_path, "no-such-command")
    assert not isinstance(failed.value, GitKilled)


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_passes_for_todo_repo() -> None:
    checked = check_fixture("todo_repo", ROOT, checkout=ROOT)
    problems, summary = checked.problems, checked.summary

    assert problems == []
    assert "original: hidden 2/6, visible 3/3" in summary and "solution: hidden 6/6, visible 3/3" in summary


@pytest.mark.usefixtures("child_processes")
def test_the_suites_small_task_passes_fixtures_check_as_its_runs_expect() -> None:
    """tests/small_task.py's task, which the runner's, faults', shards' and workers' tests run: a grading of one
    pytest, with the counts those tests assert."""
    checked = check_fixture(small_task.NAME, small_task.ROOT, checkout=ROOT)
    problems, summary = checked.problems, checked.summary

    assert problems == []
    hidden, total, visible = small_task.UNTOUCHED
    assert f"original: hidden {hidden}/{total}, visible {visible}/1" in summary
    assert f"solution: hidden {total}/{total}, visible 1/1" in summary
    assert load_fixture(small_task.NAME, small_task.ROOT).grading == "library"


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_reports_a_wrong_expected_count(calc_tree: Path) -> None:
    edit_calc_yaml(calc_tree, expected_hidden_passing=2)

    checked = check_fixture(small_task.NAME, calc_tree, checkout=ROOT)
    problems = checked.problems

    assert problems == ["original: 1 of 3 hidden tests pass, expected 2"]


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_reports_a_wrong_hidden_total(calc_tree: Path) -> None:
    edit_calc_yaml(calc_tree, hidden_total=2, expected_hidden_passing=1)

    checked = check_fixture(small_task.NAME, calc_tree, checkout=ROOT)
    problems = checked.problems

    assert any("3 hidden tests ran, fixture.yaml says 2" in p for p in problems)


def test_fixtures_check_reports_a_hidden_test_named_like_a_fixture_file(tree: Path) -> None:
    shutil.copy(tree / "hidden_tests/todo_repo/test_hidden_due_dates.py", tree / "fixtures/todo_repo/")

    checked = check_fixture("todo_repo", tree, checkout=ROOT)
    problems = checked.problems

    assert problems == ["hidden test test_hidden_due_dates.py has the name of a fixture or solution file"]


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_reports_a_solution_that_does_not_solve(calc_tree: Path) -> None:
    hidden = calc_tree / f"hidden_tests/{small_task.NAME}"
    shutil.copy(calc_tree / f"fixtures/{small_task.NAME}/{small_task.CODE}", hidden / f"solution/{small_task.CODE}")

    checked = check_fixture(small_task.NAME, calc_tree, checkout=ROOT)
    problems = checked.problems

    assert "solution: 1 of 3 hidden tests pass, expected 3" in problems
    assert any(p.startswith("solution: its own tests fail (test_sub_mul.py)") for p in problems)


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_reports_visible_tests_failing_on_the_original(calc_tree: Path) -> None:
    visible = calc_tree / f"fixtures/{small_task.NAME}/{small_task.VISIBLE_TEST}"
    visible.write_text(visible.read_text().replace("add(2, 3) == 5", "add(2, 3) == 6"))

    checked = check_fixture(small_task.NAME, calc_tree, checkout=ROOT)
    problems = checked.problems

    assert "original: 0 of 1 visible tests pass, expected all" in problems


@pytest.mark.usefixtures("child_processes")
def test_fixtures_check_command_names_the_broken_fixture(calc_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(calc_tree / f"fixtures/{small_task.NAME}", calc_tree / "fixtures/broken_repo")
    (calc_tree / "fixtures/broken_repo/fixture.yaml").unlink()
    status = command([], BenchConfig(fixtures_root=str(calc_tree)), checkout=ROOT)

    lines = capsys.readouterr().out.splitlines()
    assert status == 1
    assert lines[0].startswith("broken_repo: FAILED: unknown fixture 'broken_repo'")
    assert lines[1].startswith(f"{small_task.NAME}: ok")
