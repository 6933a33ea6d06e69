"""Who decides about a shell command (`--approve ask|yes|no|jeff`) once the rules (agent/rules.py) say it cannot run
on its own: read-only and test commands that stay inside the repository run by rule, in every mode.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from agent.console import visible
from agent.jeff import says_yes
from agent.rules import is_safe

APPROVE_MODES = ("ask", "yes", "no", "jeff")

AskUser = Callable[[str, "str | None"], bool]


def ask_on_terminal(command: str, opinion: str | None) -> bool:
    """A y/N question; the answer is read from stdin (a person, or a script answering for one). The command and the
    opinion are shown with their control characters escaped, so what the person reads is what would run."""
    print(f"The agent wants to run: {visible(command)}", flush=True)
    if opinion is not None:
        print(f"  jeff says: {visible(opinion)}", flush=True)
    print("Run it? [y/N] ", end="", flush=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.strip().lower() in ("y", "yes")


class Approver:
    """Decides whether a command runs in `repo`: returns (decision, by) with decision `run`|`refused`."""

    def __init__(self, mode: str, repo: Path, ask_user: AskUser = ask_on_terminal) -> None:
        if mode not in APPROVE_MODES:
            raise ValueError(f"unknown approve mode {mode!r}")
        self.mode = mode
        self.repo = repo
        self.ask_user = ask_user

    def decide(self, command: str, opinion: str | None) -> tuple[str, str]:
        if is_safe(command, self.repo):
            return "run", "rule"
        if self.mode in ("yes", "no"):
            return ("run" if self.mode == "yes" else "refused"), "flag"
        if self.mode == "jeff":  # no opinion (Jeff down) means no
            return ("run" if says_yes(opinion) else "refused"), "jeff"
        return ("run" if self.ask_user(command, opinion) else "refused"), "user"
