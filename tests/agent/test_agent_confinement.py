"""The smaller holes of issue 32, each closed: git reads only the repository's own .git, globs match as bash matches
them in the commands' locale, a by-rule pytest keeps its rootdir and cache inside the repository, a long name is
quoted back only by its start, and part3 reads a 500 as the article did. Each is shown against the real program
(git, bash, pytest) doing what the agent now prevents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agent_helpers import CALC, TEST_CALC, RunAgent

from agent import prompts
from agent.rules import is_safe
from agent.shell import run_command
from agent.shell_words import expand, read_pipeline
from agent.tools import Workspace
from bench.testing import fake_llama as fl
from bench.testing.fake_llama import FakeLlama

SECRET = "OUTSIDE-SECRET-41c9"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]


@pytest.fixture
def nested(tmp_path: Path, child_processes: None) -> Path:
    """A repository without a .git of its own, inside another git work tree whose history holds a secret."""
    outer, repo = tmp_path / "outer", tmp_path / "outer" / "repo"
    repo.mkdir(parents=True)
    (outer / "secret.txt").write_text(SECRET + "\n")
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    subprocess.run([*GIT, "init", "-q"], cwd=outer, check=True)
    subprocess.run([*GIT, "add", "secret.txt"], cwd=outer, check=True)
    subprocess.run([*GIT, "commit", "-qm", "secret"], cwd=outer, check=True)
    return repo


def test_by_rule_git_reads_only_the_repositorys_own_git(run_agent: RunAgent, nested: Path) -> None:
    plain = subprocess.run(["git", "log", "-p"], cwd=nested, capture_output=True, text=True, check=False)
    assert SECRET in plain.stdout  # git alone finds the work tree above and shows its history
    commands = ["git log -p", "git show HEAD:secret.txt", "git status"]
    assert all(is_safe(c, nested) for c in commands)
    with FakeLlama([fl.tool_calls([("run", {"command": c}) for c in commands]), fl.prose("done")]) as flint:
        run = run_agent(nested, flint.url, "--preset", "part3")
        results = [m["content"] for m in flint.requests[-1]["messages"] if m["role"] == "tool"]
    assert [a["by"] for a in run.of("approval")] == ["rule"] * 3
    assert not any(SECRET in r for r in results) and all("not a git repository" in r for r in results)


def test_the_commands_own_repository_still_works(nested: Path) -> None:
    subprocess.run([*GIT, "init", "-q"], cwd=nested, check=True)
    output = run_command("git status --short", nested, 10, 8000)
    assert output.exit_code == 0 and "calc.py" in output.text


@pytest.mark.usefixtures("child_processes")
@pytest.mark.parametrize(("locale", "matches"), [("C", ["a.py"]), ("C.UTF-8", ["a.py", "é.py"])])
def test_a_glob_matches_what_bash_matches_in_the_commands_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locale: str, matches: list[str]
) -> None:
    for name in ("a.py", "é.py", "ab.py"):  # é is two bytes: one character to `?` in UTF-8, two in the C locale
        (tmp_path / name).write_text("x\n")
    monkeypatch.setenv("LC_ALL", locale)
    [[_, word]] = read_pipeline("cat ?.py")
    bash = subprocess.run(["bash", "-c", "printf '%s\\n' ?.py"], cwd=tmp_path, capture_output=True, text=True)
    assert expand(word, tmp_path) == bash.stdout.splitlines() == matches


@pytest.mark.usefixtures("child_processes")
def test_a_by_rule_pytest_may_not_take_its_rootdir_from_above(tmp_path: Path) -> None:
    outer, repo = tmp_path / "outer", tmp_path / "outer" / "repo"
    repo.mkdir(parents=True)
    (repo / "test_calc.py").write_text("def test_one():\n    pass\n")
    (outer / "pytest.ini").write_text("[pytest]\n")
    subprocess.run([sys.executable, "-m", "pytest", "-q"], cwd=repo, capture_output=True, check=False)
    assert (outer / ".pytest_cache").is_dir() and not (repo / ".pytest_cache").exists()  # its cache went outside
    assert not is_safe("pytest -q", repo) and not is_safe("python -m pytest", repo)
    (outer / "pytest.ini").unlink()
    (outer / "setup.py").write_text("")  # without a configuration, a setup.py above decides the rootdir
    assert not is_safe("pytest -q", repo)
    (repo / "pytest.ini").write_text("[pytest]\n")  # the repository's own configuration: pytest stops there
    assert is_safe("pytest -q", repo) and is_safe("cat test_calc.py", repo)


def test_a_long_name_is_quoted_back_by_its_start_only(repo: Path) -> None:
    long = "x" * 1_000_000
    workspace = Workspace(repo, command_timeout=10)
    texts = [
        prompts.unknown_tool(long, ["read_file"]),
        prompts.refused_command(long, "flag"),
        workspace.call("read_file", {"path": long}).text,
        workspace.call("read_file", {"path": "../" + long}).text,
        workspace.call("write_file", {"path": long, "content": "x"}).text,
        workspace.call("edit_file", {"path": "sub/" + long, "old": "a", "new": "b"}).text,
    ]
    assert all(len(t) < 2 * prompts.QUOTED_HEAD + 200 and "characters)" in t for t in texts), [t[-80:] for t in texts]
    assert prompts.unknown_tool("reed_file", ["read_file"]) == (
        "Error: there is no tool named 'reed_file'. The tools are: read_file."
    )


ARGUMENTS_500 = "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] unexpected end"


def test_part3_takes_every_failed_to_parse_500_as_a_cut_answer_as_the_article_did(
    run_agent: RunAgent, repo: Path
) -> None:
    with FakeLlama([fl.parse_failure(message=ARGUMENTS_500), fl.prose("done")]) as flint:
        part3 = run_agent(repo, flint.url, "--preset", "part3")
    assert [(c["kind"], c["dropped"]) for c in part3.of("cut")] == [("unparsed", True)]
    with FakeLlama([fl.parse_failure(message=ARGUMENTS_500), fl.prose("done")]) as flint:
        plus = run_agent(repo, flint.url, "--preset", "part3+")
    assert plus.of("cut") == [] and plus.of("http_error")[0]["attempt"] == 1  # a transport error, retried
    assert part3.stop["reason"] == plus.stop["reason"] == "done"
