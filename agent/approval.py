"""Which shell commands run without asking, and who decides about the rest (`--approve ask|yes|no|jeff`).

Read-only and test commands run by rule: ls, cat, head, tail, grep, find (without actions that run or delete
things or write files), wc, pytest, python/python3 -m pytest, git status/diff/log/show. They may be joined by
pipes, and `2>&1` is allowed. Anything else, including `;`, `&`, `&&`, `||`, other redirections, backquotes and
`$(...)`, needs approval.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable

from agent.jeff import says_yes

APPROVE_MODES = ("ask", "yes", "no", "jeff")
SAFE_PROGRAMS = frozenset({"ls", "cat", "head", "tail", "grep", "wc", "pytest"})
FIND_ACTIONS = frozenset({"-exec", "-execdir", "-delete", "-ok", "-okdir", "-fls"})  # and -fprint*
GIT_READ_ONLY = frozenset({"status", "diff", "log", "show"})
MERGED_STDERR = re.compile(r"(?<!\S)2>&1(?!\S)")
SHELL_PUNCTUATION = frozenset("();<>|&")

AskUser = Callable[[str, "str | None"], bool]


def is_safe(command: str) -> bool:
    """True when the command only reads or runs the tests, by the rules above."""
    if "`" in command or "$(" in command or "\n" in command or "\r" in command:
        return False
    try:
        lexer = shlex.shlex(MERGED_STDERR.sub(" ", command), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: bash would not read it the way we do
        return False
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token == "|":
            segments.append([])
        elif token and set(token) <= SHELL_PUNCTUATION:
            return False
        else:
            segments[-1].append(token)
    return all(segment and _safe_program(segment) for segment in segments)


def _safe_program(words: list[str]) -> bool:
    program, rest = words[0], words[1:]
    if program in SAFE_PROGRAMS:
        return True
    if program == "find":
        return not any(w in FIND_ACTIONS or w.startswith("-fprint") for w in rest)
    if program in ("python", "python3"):
        return rest[:2] == ["-m", "pytest"]
    if program == "git":  # `git diff --output=FILE` writes a file
        return bool(rest) and rest[0] in GIT_READ_ONLY and not any(w.startswith("--output") for w in rest)
    return False


def ask_on_terminal(command: str, opinion: str | None) -> bool:
    """A y/N question; the answer is read from stdin (a person, or a script answering for one)."""
    print(f"The agent wants to run: {command}", flush=True)
    if opinion is not None:
        print(f"  jeff says: {opinion}", flush=True)
    print("Run it? [y/N] ", end="", flush=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    return line.strip().lower() in ("y", "yes")


class Approver:
    """Decides whether a command runs: returns (decision, by) with decision `run`|`refused`."""

    def __init__(self, mode: str, ask_user: AskUser = ask_on_terminal) -> None:
        if mode not in APPROVE_MODES:
            raise ValueError(f"unknown approve mode {mode!r}")
        self.mode = mode
        self.ask_user = ask_user

    def decide(self, command: str, opinion: str | None) -> tuple[str, str]:
        if is_safe(command):
            return "run", "rule"
        if self.mode in ("yes", "no"):
            return ("run" if self.mode == "yes" else "refused"), "flag"
        if self.mode == "jeff":  # no opinion (Jeff down) means no
            return ("run" if says_yes(opinion) else "refused"), "jeff"
        return ("run" if self.ask_user(command, opinion) else "refused"), "user"
