"""Every shell block of README.md and docs/ (a fence marked sh, or one whose lines are commands: bench, make, python,
llama-server, git, cd) is either run by a test or says it is not: each of its command lines is one that
tests/test_doc_blocks_run.py runs as written, or the block is preceded by `<!-- not run: REASON -->` (on the nearest
line before its fence that is not blank). A synopsis block (every line with a NAME, an [option] or a|b to fill in) is
no command: tests/test_doc_commands.py holds it to the parser. A marker on a block whose lines all run is stale."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from test_doc_blocks_run import LINES
from test_doc_commands import FENCE, PAGES, is_synopsis, strip_comment, words

COMMANDS = ("bench", ".venv/bin/bench", "make", "python", "python3", "llama-server", "git", "cd")
SHELL = ("sh", "bash", "shell", "console")
MARKER = re.compile(r"<!-- not run: (?P<reason>[^>]*\S[^>]*) -->")


@dataclass(frozen=True)
class Block:
    where: str  # page:line of its fence
    lines: list[str]  # its command lines, as a user types them
    marker: str  # the reason it is not run, "" when none is given


def shell_blocks(page: Path) -> list[Block]:
    found, text = [], page.read_text(encoding="utf-8").splitlines()
    fence, before = None, ""
    for number, line in enumerate(text, start=1):
        if not FENCE.match(line):
            before = line if fence is None and line.strip() else before
            continue
        if fence is None:
            fence, start, marker = line.strip().removeprefix("```"), number, MARKER.search(before)
            continue
        body = text[start : number - 1]
        if fence in SHELL or any(is_command(line) for line in body):
            marked = marker.group("reason") if marker else ""
            found.append(Block(f"{page.name}:{start}", block_commands(body), marked))
        fence, before = None, ""
    return found


def is_command(line: str) -> bool:
    """A line that starts with a command, not a line of output naming one (`llama-server check: ...`)."""
    stripped = line.strip().removeprefix("$ ")
    return stripped.split(" ", 1)[0] in COMMANDS and not re.match(r"\S+ \S+:\s", stripped)


def block_commands(body: list[str]) -> list[str]:
    """A block's command lines: joined across `\\`, without a prompt or a trailing comment; `cd DIR && bench ...` as
    its bench part (as tests/test_doc_commands.py reads it)."""
    joined: list[str] = []
    for line in body:
        stripped = line.strip().removeprefix("$ ")
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1].rstrip("\\").rstrip() + " " + stripped
        elif is_command(stripped):
            joined.append(stripped)
    lines = [strip_comment(line) for line in joined]
    return [line.split(" && ", 1)[1] if " && bench " in line else line for line in lines]


def concrete(block: Block) -> list[str]:
    """Its lines a user runs as written (not a synopsis with parts to fill in)."""
    return [line for line in block.lines if not synopsis(line)]


def synopsis(line: str) -> bool:
    if "$(" in line:  # a shell substitution fills it in: a command as written
        return False
    try:
        return is_synopsis(words(line))
    except ValueError:  # not a line shlex can split: no command as written
        return True


BLOCKS = [block for page in PAGES for block in shell_blocks(page)]


def test_the_docs_shell_blocks_are_found() -> None:
    assert len(BLOCKS) >= 20 and any(block.marker for block in BLOCKS), BLOCKS
    assert any(concrete(block) and set(concrete(block)) <= set(LINES) for block in BLOCKS)  # some run whole


def test_every_shell_block_is_run_by_a_test_or_says_why_not() -> None:
    unmarked = [
        f"{block.where}: {next(line for line in concrete(block) if line not in LINES)}"
        for block in BLOCKS
        if not block.marker and any(line not in LINES for line in concrete(block))
    ]
    assert unmarked == [], "run these in a test, or put <!-- not run: REASON --> before the block"


def test_no_block_that_runs_is_marked_as_not_run() -> None:
    stale = [block.where for block in BLOCKS if block.marker and concrete(block) and set(concrete(block)) <= set(LINES)]
    assert stale == [], "these blocks run in tests/test_doc_blocks_run.py: their marker is stale"
