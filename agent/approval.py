"""Who decides about a shell command (`--approve ask|yes|no|jeff`) once the rules (agent/rules.py) say it cannot run
on its own: read-only and test commands that stay inside the repository run by rule, in every mode, and so does the
fixture's own test command of another language (--test-command), exactly as given and nothing more.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from agent.console import fold, legible, say
from agent.jeff import says_yes
from agent.rules import is_safe

APPROVE_MODES = ("ask", "yes", "no", "jeff")
ROW = "| "  # starts each row of the command
ROW_JEFF = "  jeff says: "

AskUser = Callable[[str, "str | None"], bool]


def ask_on_terminal(command: str, opinion: str | None) -> bool:
    """A y/N question; the answer is read from stdin (a person, or a script answering for one). The command is
    shown whole, folded to the terminal's width, with its length, its control characters escaped and its runs of
    spaces written as their length (agent/console.py legible), so what the person reads is what would run."""
    if not say(question(command, opinion, shutil.get_terminal_size()), end=""):
        return False  # nobody can read the question: no
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.strip().lower() in ("y", "yes")


def question(command: str, opinion: str | None, size: os.terminal_size) -> str:
    """The question's text for a terminal of `size`: every row narrower than the screen."""
    width = max(size.columns - len(ROW) - 1, 20)
    rows = [f"The agent wants to run a command of {len(command)} characters:"]
    rows += [ROW + row for row in fold(legible(command), width)]
    if opinion is not None:
        rows += [ROW_JEFF + row for row in fold(legible(opinion), width - len(ROW_JEFF) + len(ROW))]
    if len(rows) + 1 >= size.lines:
        rows.append(f"(the question takes {len(rows)} rows, more than the screen shows: scroll up to read it all)")
    return "\n".join(rows) + "\nRun it? [y/N] "


class Approver:
    """Decides whether a command runs in `repo`: returns (decision, by) with decision `run`|`refused`."""

    def __init__(self, mode: str, repo: Path, ask_user: AskUser = ask_on_terminal, test_command: str = "") -> None:
        if mode not in APPROVE_MODES:
            raise ValueError(f"unknown approve mode {mode!r}")
        self.mode = mode
        self.repo = repo
        self.ask_user = ask_user
        self.test_command = test_command.strip()  # another language's tests (--test-command): run by rule as given

    def decide(self, command: str, opinion: str | None) -> tuple[str, str]:
        if is_safe(command, self.repo) or (self.test_command and command.strip() == self.test_command):
            return "run", "rule"
        if self.mode in ("yes", "no"):
            return ("run" if self.mode == "yes" else "refused"), "flag"
        if self.mode == "jeff":  # no opinion (Jeff down) means no
            return ("run" if says_yes(opinion) else "refused"), "jeff"
        return ("run" if self.ask_user(command, opinion) else "refused"), "user"
