"""A differential fuzz of the shell reading against real bash: commands made of quotes, `#`, `~`, globs,
redirections and non-ASCII names, in a folder whose files the globs match (non-ASCII names among them). Where the
agent's reader accepts a command, the words it finds must be word for word those bash hands the program, in the C
locale (the sandbox's) and in a UTF-8 one; where it does not, the rule asks for approval (fails closed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

from agent.rules import is_safe
from agent.shell_words import Unsupported, expand_all, read_pipeline

# Every test here starts child processes: the fast tier leaves them out (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("child_processes")

BASH = shutil.which("bash") or "/bin/bash"
FILES = [
    "a.py",
    "b.py",
    "B.py",
    "ab.py",
    "_u.py",
    "é.py",
    "日本.txt",
    "a b.py",
    "x#y.txt",
    "Ω1",
    "ÅB.txt",
    "-n",
    "sub/c.py",
    "sub/é.txt",
    "sub/ab.txt",
]
FRAGMENTS = [
    # quotes
    "'a b'",
    '"a b"',
    "'",
    '"',
    "'it'\\''s'",
    '"q\\"x"',
    '"\\\\"',
    "\\'",
    "''",
    '""',
    "'#'",
    '"~"',
    "\\ ",
    # comments
    "#",
    "a#",
    "#b",
    "'#'x",
    "x#y.txt",
    # tildes
    "~",
    "~/x",
    "a~",
    "x=~",
    "HEAD~1",
    "~+",
    "\\~",
    "a:~",
    # globs
    "*",
    "?",
    "*.py",
    "?.py",
    "??.py",
    "???.py",
    "sub/*",
    "sub/?.txt",
    "*.txt",
    "'*'",
    "\\*",
    '"*".py',
    "é*",
    "*b*",
    "[ab].py",
    ".*",
    "*/",
    "?*",
    "Ω?",
    "'a b'*",
    "*'.py'",
    "s?b/*.p?",
    # redirections
    ">",
    ">x",
    "<",
    "<x",
    "2>&1",
    "2>x",
    ">>",
    "<<EOF",
    "<<<x",
    "&>x",
    "1>&2",
    "|",
    # non-ASCII
    "é",
    "日本",
    "'é'",
    '"日本.txt"',
    "\u00a0",
    "'\u00a0'",
    "é.py",
    "日本.*",
    # plain
    "a.py",
    "sub",
    "-n",
    "5",
    "x",
    "=",
    ":",
    "a=b",
    "-la",
]
SEPARATORS = st.sampled_from([" ", " ", " ", "", "\t"])
LOCALES = ["C", "C.UTF-8"]
SHOW_WORDS = "cat() { printf '%s\\0' cat \"$@\"; }\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "repo"
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    return root


@contextmanager
def locale(name: str) -> Iterator[None]:
    """The agent's environment in the locale `name` (its commands, and the bash that expands its globs, get it)."""
    before = os.environ.get("LC_ALL")
    os.environ["LC_ALL"] = name
    try:
        yield
    finally:
        if before is None:
            del os.environ["LC_ALL"]
        else:
            os.environ["LC_ALL"] = before


@st.composite
def commands(draw: st.DrawFn) -> str:
    text = "cat" + draw(st.sampled_from([" ", "\t"]))  # the program stays `cat`
    for i, fragment in enumerate(draw(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4))):
        text += (draw(SEPARATORS) if i else "") + fragment
    return text


def bash_words(command: str, cwd: Path) -> list[str] | None:
    """The words bash hands `cat` for `command` (cat made a function that prints them), or None when it ran none."""
    done = subprocess.run(
        [BASH, "-c", SHOW_WORDS + command],
        cwd=cwd,
        env={**os.environ, "HOME": str(cwd / "home")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=10,
        check=False,
    )
    return [os.fsdecode(w) for w in done.stdout.split(b"\0")[:-1]] or None


@pytest.mark.parametrize("name", LOCALES)
@examples(120)
@given(command=commands())
def test_the_agents_words_are_bashs_words_or_it_asks(folder: Path, name: str, command: str) -> None:
    with locale(name):
        try:
            [words] = read_pipeline(command)
            ours = [words[0].text] + [text for texts in expand_all(words[1:], folder) for text in texts]
        except (Unsupported, ValueError):  # ValueError: a pipeline of more than one command (covered elsewhere)
            assert not is_safe(command, folder)  # what it cannot read, the rule does not let run
            return
        assert bash_words(command, folder) == ours, (name, command)


def test_the_folder_tells_the_locales_apart(folder: Path) -> None:
    """The fuzz's folder is one where the locales differ: `?` is a character in UTF-8 and a byte in C."""
    [words] = read_pipeline("cat ?.py")
    with locale("C"):
        in_c = expand_all(words[1:], folder)
    with locale("C.UTF-8"):
        in_utf8 = expand_all(words[1:], folder)
    assert in_c == [["B.py", "a.py", "b.py"]] and in_utf8 == [["B.py", "a.py", "b.py", "é.py"]]
