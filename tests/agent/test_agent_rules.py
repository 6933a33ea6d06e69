"""Which commands run by rule: only those that cannot write files and whose paths stay inside the repository.

Every case that needs approval is also run for real against a temp repository with `--approve no` where it would
otherwise have done damage, to show the rule is what stops it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_helpers import TEST_CALC, RunAgent

from agent.approval import Approver
from agent.rules import is_safe
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

SAFE = [
    "ls",
    "ls -la src",
    "cat calc.py",
    "head -n 20 calc.py",
    "tail -n +40 calc.py | head -n 200",
    "grep -rn 'def add' .",
    "grep -n 'x$' calc.py",
    "find . -name '*.py'",
    "wc -l calc.py test_calc.py",
    "cat *.py",
    "pytest",
    "pytest -q -x test_calc.py",
    "pytest -qx --tb=short -k 'add and not slow' test_calc.py::test_add",
    "pytest -rA --maxfail 2 --lf --durations=5",
    "pytest -k add -m 'not slow' -vv",
    "python -m pytest -q",
    "python3 -m pytest tests/ 2>&1 | tail -n 20",
    "git status",
    "git diff HEAD",
    "git log --oneline -5",
    "git show HEAD:calc.py",
    "cat calc.py | grep add | wc -l",
    f"cat {'{repo}'}/calc.py",  # an absolute path inside the repository
]

NEEDS_APPROVAL = [
    "rm -rf build",
    "ls; rm calc.py",
    "ls && rm calc.py",
    "ls || rm calc.py",
    "ls &",
    "cat calc.py > copy.py",
    "cat calc.py >> copy.py",
    "grep add < calc.py",
    "ls 2>/dev/null",
    "echo $(whoami)",
    "echo `whoami`",
    "ls\nrm calc.py",
    "cat 'unbalanced",
    "find . -delete",
    "find . -name x -exec rm {} ;",
    "find . -execdir ls ;",
    "find . -fprint out.txt",
    "git commit -am wip",
    "git push",
    "git diff --output=patch.txt",
    "git",
    "python -c 'print(1)'",
    "python -m pip install requests",
    "python3 calc.py",
    "pytest > log.txt",
    "cat calc.py | sh",
    "sed -i s/add/sub/ calc.py",
    "FOO=1 pytest",
    "/bin/ls",
    "ls |",
]

# pytest options that write files or load code, in every form pytest's parser takes them.
PYTEST_WRITES_OR_LOADS = [
    "pytest --junitxml=test_calc.py",
    "pytest --junitxml test_calc.py",
    "pytest --junit-xml=out.xml",
    "pytest --junit-x=out.xml",  # an abbreviation
    "pytest -q --basetemp=tests",
    "pytest --basetemp tests",
    "pytest -p evil",
    "pytest -pevil",
    "pytest -qp evil",
    "pytest -p no:cacheprovider",
    "pytest --rootdir=..",
    "pytest -o cache_dir=..",
    "pytest -ocache_dir=/tmp/x",
    "pytest --override-ini=cache_dir=x",
    "pytest --override-ini cache_dir=x",
    "pytest --confcutdir=..",
    "pytest --resultlog=log.txt",
    "pytest --result-log=log.txt",
    "pytest --debug",
    "pytest --debug=debug.log",
    "pytest -c other.ini",
    "pytest -cother.ini",
    "pytest -xc other.ini",
    "pytest --config-file=other.ini",
    "pytest --log-file=log.txt",
    "pytest --log-file log.txt",
    "pytest --cache-clear",
    "pytest --pastebin=all",
    "python -m pytest --junitxml=x.xml",
    "python3 -m pytest -p evil",
]

# Paths that lead out of the repository, however they are spelled.
PATHS_OUT = [
    "cat ../secret.txt",
    "cat /etc/passwd",
    "head ~/.ssh/x",
    "cat ~",
    "cat ../*",
    "cat /etc/pass*",
    "ls ..",
    "ls -la /",
    "grep -r password /etc",
    "grep -f/etc/passwd calc.py",
    "grep --file=../secret.txt calc.py",
    "find / -name passwd",
    "find . -newer ../secret.txt",
    "wc -c sub/../../secret.txt",
    "cat link.txt",  # a symlink inside the repository that points out
    "cat l*.txt",  # a glob that matches it
    "cat $HOME/.bashrc",
    'cat "$HOME/.bashrc"',
    "cat ${HOME}/.bashrc",
    "cat {../secret.txt,calc.py}",
    "cat \\$HOME",
    "pytest ../other_repo",
    "python -m pytest /",
    "git diff --no-index ../secret.txt calc.py",
    "tail -n 5 /proc/self/environ",
]


@pytest.fixture
def repo_with_link(repo: Path) -> Path:
    (repo.parent / "secret.txt").write_text("password\n")
    (repo / "link.txt").symlink_to(repo.parent / "secret.txt")
    return repo


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("command", SAFE)
def test_read_only_and_test_commands_run_by_rule(repo: Path, command: str) -> None:
    command = command.replace("{repo}", str(repo))
    assert is_safe(command, repo)
    assert Approver("no", repo).decide(command, None) == ("run", "rule")


@pytest.mark.parametrize("command", NEEDS_APPROVAL + PYTEST_WRITES_OR_LOADS)
def test_commands_that_write_or_run_other_things_need_approval(repo: Path, command: str) -> None:
    assert not is_safe(command, repo)
    assert Approver("no", repo).decide(command, None) == ("refused", "flag")


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize("command", PATHS_OUT)
def test_commands_naming_paths_outside_the_repository_need_approval(repo_with_link: Path, command: str) -> None:
    assert not is_safe(command, repo_with_link)


def test_the_repository_may_be_named_through_a_symlink(repo: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    assert is_safe("cat calc.py test_calc.py", alias) and is_safe(f"cat {repo}/calc.py", alias)


def run_commands(run_agent: RunAgent, repo: Path, *commands: str) -> tuple[list[dict], list[str]]:
    """The approvals, and the tool results the model saw, for a run that asks for `commands` with --approve no."""
    script = [fl.tool_call("run", {"command": c}) for c in commands] + [fl.prose("done")]
    with FakeLlama(script) as flint:
        run = run_agent(repo, flint.url, "--approve", "no")
        results = [m["content"] for m in flint.requests[-1]["messages"] if m["role"] == "tool"]
    return run.of("approval"), results


def test_the_published_escapes_are_refused_in_a_real_repository(run_agent: RunAgent, repo_with_link: Path) -> None:
    repo = repo_with_link
    commands = ["pytest -q --junitxml=test_calc.py", "pytest --basetemp=tests", "cat ../secret.txt", "cat /etc/passwd"]
    approvals, results = run_commands(run_agent, repo, *commands)
    assert [(a["decision"], a["by"]) for a in approvals] == [("refused", "flag")] * 4
    assert all("was not run" in r for r in results) and not any("password" in r or "root:" in r for r in results)
    assert (repo / "test_calc.py").read_text() == TEST_CALC


def test_a_by_rule_pytest_and_cat_still_run(run_agent: RunAgent, repo: Path) -> None:
    approvals, results = run_commands(run_agent, repo, "pytest -q", "cat calc.py")
    assert [(a["decision"], a["by"]) for a in approvals] == [("run", "rule")] * 2
    assert "1 passed" in results[0] and results[1].startswith("def add")


OUTSIDE_TEST = "from pathlib import Path\n\n\ndef test_outside():\n    Path(__file__).with_name('ran').write_text('')\n"


@pytest.fixture
def repo_beside_tests(repo: Path) -> Path:
    """A repository with a link to a folder deep inside it, and, beside it, tests of another project."""
    (repo / "sub" / "deeper").mkdir(parents=True)
    (repo / "link").symlink_to(repo / "sub" / "deeper")
    (repo.parent / "test_outside.py").write_text(OUTSIDE_TEST)
    return repo


@pytest.mark.parametrize("command", ["pytest -q link/../..", "python -m pytest link/../../test_outside.py"])
def test_a_path_through_a_link_is_judged_as_pytest_reads_it(
    run_agent: RunAgent, repo_beside_tests: Path, command: str
) -> None:
    """pytest reads `link/../..` as `..` (lexically); the kernel would read it as the repository itself."""
    repo = repo_beside_tests
    assert not is_safe(command, repo)
    approvals, _ = run_commands(run_agent, repo, command)
    assert [a["decision"] for a in approvals] == ["refused"] and not (repo.parent / "ran").exists()


def test_plain_pytest_needs_approval_while_a_link_leads_out(run_agent: RunAgent, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "test_outside.py").write_text(OUTSIDE_TEST)
    assert is_safe("pytest -q", repo)
    (repo / "vendor").symlink_to(outside)
    assert not is_safe("pytest -q", repo) and not is_safe("python -m pytest", repo)
    with FakeLlama([fl.tool_call("run", {"command": "pytest -q"}), fl.prose("done")]) as flint:
        # the article's done check would follow the link; two steps, the script's (then "done" again and again)
        run = run_agent(repo, flint.url, "--preset", "part3+", "--max-steps", "2")
    assert [a["decision"] for a in run.of("approval")] == ["refused"] and not (outside / "ran").exists()
    assert not is_safe("cat vendor/../calc.py", repo)  # cat reads it physically: beside the link's target
