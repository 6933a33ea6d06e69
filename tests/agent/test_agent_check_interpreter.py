"""The done check's interpreter is out of the model's reach (agent/check_python.py), end to end: the agent against
the scripted server, `--approve no`, on todo_repo where the model writes a broken todo.py (its tests then fail) and
one of the attacks below; no run may stop `done`.

- A start-up hook: a new test file that, the first time the check imports it, writes a usercustomize.py into the
  user site of the commands' user; every later Python of that user that reads its user site runs it. The agent runs
  on an interpreter whose user site is on (a venv with the system's packages, as a plain python3 in a container is).
- A stand-in pytest: with a PYTHONPATH that names the repository, a ten-line `pytest.py` (or a `pytest/` package)
  of the repository that says every test passed.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from agent_helpers import ROOT, Run, RunAgent, read_events
from done_attacks import BROKEN_TODO, NEW_TEST, PATCH, write

from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

pytestmark = pytest.mark.usefixtures("child_processes")

HOOK_INSTALLER = f"""
import os, site

folder = site.getusersitepackages()
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "usercustomize.py"), "w") as f:
    f.write({PATCH!r})


def test_setup():
    pass
"""
STAND_IN_PYTEST = """import sys


def hookimpl(*args, **kwargs):
    return lambda function: function


def main(args=None, plugins=()):
    for plugin in plugins:
        plugin.pytest_sessionfinish(None, 0)
    print("1 test collected" if "--collect-only" in sys.argv else "3 passed")
    return 0


console_main = main
"""


BREAK = [write("todo.py", BROKEN_TODO), write("test_new.py", NEW_TEST)]  # strict also needs a new test
DONE = fl.prose("Done: the tests pass.")


@pytest.fixture
def todo_repo(tmp_path: Path) -> Path:
    repo = tmp_path / f"todo-{uuid.uuid4().hex[:12]}"
    shutil.copytree(ROOT / "fixtures" / "todo_repo", repo)
    return repo


def python_with_a_user_site(folder: Path) -> Path:
    """A Python whose user site is on: a venv that sees the system's packages (this one's through a .pth file of the
    arrangement's own, so that pytest is there)."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(packages, "this-suite.pth").write_text("".join(f"{p}\n" for p in site.getsitepackages()))
    return python


@pytest.mark.parametrize("preset", ["part3+", "strict", "late"])
def test_a_start_up_hook_a_test_installs_does_not_reach_the_check(todo_repo: Path, tmp_path: Path, preset: str) -> None:
    python = python_with_a_user_site(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONNOUSERSITE", "PYTHONUSERBASE")}
    # Two done checks: the first imports the new test (which installs the hook), the second would run under it.
    script = [write("test_hook.py", HOOK_INSTALLER), *BREAK, DONE, DONE]
    events = tmp_path / "events.jsonl"
    with FakeLlama(script) as flint:
        args = ["--repo", str(todo_repo), "--task", "t", "--flint", flint.url, "--events", str(events)]
        args += ["--preset", preset, "--max-steps", str(len(script)), "--approve", "no", "--no-jeff"]
        done = subprocess.run(
            [python, "-m", "agent", *args], cwd=ROOT, env={**env, "HOME": str(home)}, capture_output=True, timeout=300
        )
    run = Run(done.returncode, read_events(events))
    hooks = list(home.glob(".local/lib/python*/site-packages/usercustomize.py"))
    assert hooks, "the new test did not install its hook"  # the attack ran
    assert [c["passed"] for c in run.of("done_check")] == [False, False], run.of("done_check")
    assert run.stop["reason"] == "step_limit" and done.returncode == 1


@pytest.mark.parametrize("preset", ["part3", "part3+", "strict", "late"])
@pytest.mark.parametrize("where", ["pytest.py", "pytest/__init__.py"])
def test_a_pytest_of_the_repository_never_stands_in_for_pytest_even_on_the_pythonpath(
    run_agent: RunAgent, todo_repo: Path, monkeypatch: pytest.MonkeyPatch, preset: str, where: str
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(todo_repo))
    script = [write(where, STAND_IN_PYTEST), *BREAK, DONE]
    with FakeLlama(script) as flint:
        run = run_agent(todo_repo, flint.url, "--preset", preset, "--max-steps", str(len(script)))
    [check] = run.of("done_check")
    assert not check["passed"] and "3 failed" in check["summary"], check
    assert run.stop["reason"] == "step_limit"
