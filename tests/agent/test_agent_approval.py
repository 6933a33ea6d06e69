"""Which commands run by rule, and how each --approve mode decides about the rest."""

from __future__ import annotations

import io

import pytest

from agent.approval import Approver, ask_on_terminal, is_safe
from agent.jeff import says_yes

SAFE = [
    "ls",
    "ls -la src",
    "cat calc.py",
    "head -n 20 calc.py",
    "tail -n +40 calc.py | head -n 200",
    "grep -rn 'def add' .",
    "find . -name '*.py'",
    "wc -l calc.py test_calc.py",
    "pytest",
    "pytest -q -x test_calc.py",
    "python -m pytest -q",
    "python3 -m pytest tests/ 2>&1 | tail -n 20",
    "git status",
    "git diff HEAD",
    "git log --oneline -5",
    "git show HEAD:calc.py",
    "cat calc.py | grep add | wc -l",
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


@pytest.mark.parametrize("command", SAFE)
def test_read_only_and_test_commands_run_by_rule(command: str) -> None:
    assert is_safe(command)
    assert Approver("no").decide(command, None) == ("run", "rule")


@pytest.mark.parametrize("command", NEEDS_APPROVAL)
def test_other_commands_need_approval(command: str) -> None:
    assert not is_safe(command)
    assert Approver("no").decide(command, None) == ("refused", "flag")


def test_yes_runs_everything_and_no_refuses_what_needs_approval() -> None:
    assert Approver("yes").decide("rm -rf build", None) == ("run", "flag")
    assert Approver("no").decide("rm -rf build", "yes, looks fine") == ("refused", "flag")


OPINIONS = [
    ("yes, it only creates a file", "run"),
    ("Yes.", "run"),
    ("**YES** fine", "run"),
    ("no, it deletes files", "refused"),
    ("yesterday's files are gone", "refused"),
    ("", "refused"),
    (None, "refused"),
]


@pytest.mark.parametrize(("opinion", "decision"), OPINIONS)
def test_jeff_mode_follows_the_first_word_of_the_opinion(opinion: str | None, decision: str) -> None:
    assert Approver("jeff").decide("touch notes.txt", opinion) == (decision, "jeff")
    assert says_yes(opinion) is (decision == "run")


def test_ask_mode_asks_only_about_commands_that_need_it_and_shows_jeffs_opinion() -> None:
    questions: list[tuple[str, str | None]] = []

    def answer(command: str, opinion: str | None) -> bool:
        questions.append((command, opinion))
        return command.startswith("touch")

    approver = Approver("ask", ask_user=answer)
    assert approver.decide("ls", "yes") == ("run", "rule")
    assert approver.decide("touch a.txt", "yes, harmless") == ("run", "user")
    assert approver.decide("rm a.txt", None) == ("refused", "user")
    assert questions == [("touch a.txt", "yes, harmless"), ("rm a.txt", None)]


@pytest.mark.parametrize(
    ("typed", "runs"), [("y\n", True), ("YES\n", True), ("n\n", False), ("\n", False), ("", False)]
)
def test_the_terminal_question_reads_y_or_n(
    typed: str, runs: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    assert ask_on_terminal("rm a.txt", "no, it deletes a file") is runs
    shown = capsys.readouterr().out
    assert "rm a.txt" in shown and "no, it deletes a file" in shown and "[y/N]" in shown


def test_an_unknown_mode_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="maybe"):
        Approver("maybe")
