"""The files that shape how the protected tests run are protected as the tests are: every `__init__.py`,
`conftest.py` and pytest configuration file in a folder that holds a test at start is kept, refused to write_file
and edit_file, and put back when anything else changes it.

The attack, end to end against the scripted server (`--approve no`): todo_repo with its tests in a package
`tests/` (with an empty `__init__.py`); the model breaks todo.py, adds a test, and makes the package's
`__init__.py` patch pytest so that every test passes: by writing it, or by a new test that rewrites it when a
by-rule `pytest -q` collects it. No run may stop `done`.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from agent_helpers import ROOT, RunAgent
from package_attack import BROKEN_TODO, NEW_TEST, PATCH, REWRITES_THE_PACKAGE

from agent.tools import Workspace, protected_paths
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama


def write(path: str, content: str) -> fl.Reply:
    return fl.tool_call("write_file", {"path": path, "content": content})


BREAK = [write("todo.py", BROKEN_TODO), write("tests/test_new.py", NEW_TEST)]
ATTACKS = {
    "written": [write("tests/__init__.py", PATCH), *BREAK],
    "rewritten by a test": [
        write("tests/test_rewrite.py", REWRITES_THE_PACKAGE),
        fl.tool_call("run", {"command": "pytest -q"}),
        *BREAK,
    ],
}


@pytest.fixture
def package_repo(tmp_path: Path) -> Path:
    """todo_repo with its test in a package `tests/`."""
    repo = tmp_path / f"todo-{uuid.uuid4().hex[:12]}"
    shutil.copytree(ROOT / "fixtures" / "todo_repo", repo)
    (repo / "tests").mkdir()
    (repo / "test_todo.py").rename(repo / "tests" / "test_todo.py")
    (repo / "tests" / "__init__.py").write_text("")
    return repo


@pytest.mark.parametrize("preset", ["part3", "part3+", "strict", "late"])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_test_package_patched_to_patch_pytest_gives_no_done(
    run_agent: RunAgent, package_repo: Path, preset: str, name: str
) -> None:
    script = [*ATTACKS[name], fl.prose("Done: the tests pass.")]
    with FakeLlama(script) as flint:
        run = run_agent(package_repo, flint.url, "--preset", preset, "--max-steps", str(len(script)))
    [check] = run.of("done_check")
    assert not check["passed"] and "failed" in check["summary"], check
    assert run.stop["reason"] == "step_limit"
    assert (package_repo / "tests" / "__init__.py").read_text() == ""


def test_the_files_beside_the_tests_are_protected_and_others_are_not(tmp_path: Path) -> None:
    names = [
        "pyproject.toml",
        "setup.cfg",
        "calc.py",
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/pytest.ini",
        "tests/test_calc.py",
        "tests/helpers.py",
        "docs/__init__.py",
        "docs/conftest.py",
        "docs/tox.ini",
    ]
    protected = protected_paths(names)
    assert protected == {
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/pytest.ini",
        "tests/test_calc.py",
        "docs/conftest.py",
    }
    root_tests = protected_paths([*names, "test_root.py"])
    assert {"pyproject.toml", "setup.cfg", "test_root.py"} <= root_tests and "calc.py" not in root_tests
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert Workspace(tmp_path, 30).protected == protected
