"""How each --approve mode decides about the commands the rules (tests: test_agent_rules.py) do not let run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.approval import Approver, ask_on_terminal
from agent.jeff import says_yes


def test_yes_runs_everything_and_no_refuses_what_needs_approval(repo: Path) -> None:
    assert Approver("yes", repo).decide("rm -rf build", None) == ("run", "flag")
    assert Approver("no", repo).decide("rm -rf build", "yes, looks fine") == ("refused", "flag")


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
def test_jeff_mode_follows_the_first_word_of_the_opinion(repo: Path, opinion: str | None, decision: str) -> None:
    assert Approver("jeff", repo).decide("touch notes.txt", opinion) == (decision, "jeff")
    assert says_yes(opinion) is (decision == "run")


def test_ask_mode_asks_only_about_commands_that_need_it_and_shows_jeffs_opinion(repo: Path) -> None:
    questions: list[tuple[str, str | None]] = []

    def answer(command: str, opinion: str | None) -> bool:
        questions.append((command, opinion))
        return command.startswith("touch")

    approver = Approver("ask", repo, ask_user=answer)
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


def test_an_unknown_mode_is_a_programming_error(repo: Path) -> None:
    with pytest.raises(ValueError, match="maybe"):
        Approver("maybe", repo)
