"""A differential fuzz of the shell reading against real bash: commands made of quotes, `#`, `~`, globs,
redirections and non-ASCII names, in a folder whose files the globs match (non-ASCII names among them). Where the
agent's reader accepts a command, the words it finds must be word for word those bash hands the program, in the C
locale (the sandbox's) and in a UTF-8 one; where it does not, the rule asks for approval (fails closed).

Besides hypothesis's search, a seeded sample composed the same way counts what docs/agent.md reports: commands read
word for word as bash reads them, commands not read (asked about), and misclassified ones (read differently, or run by
rule unread), which must be none. The suite draws SAMPLE commands a locale; `BENCH_FUZZ_COMMANDS=5000 pytest -s -k
seeded tests/agent/test_agent_shell_fuzz.py` draws the documented 5,000 and prints the counts."""

from __future__ import annotations

import os
import random
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
SEPARATOR_CHOICES = [" ", " ", " ", "", "\t"]  # a space most often
SEPARATORS = st.sampled_from(SEPARATOR_CHOICES)
LOCALES = ["C", "C.UTF-8"]
SHOW_WORDS = "cat() { printf '%s\\0' cat \"$@\"; }\n"
SAMPLE = int(os.environ.get("BENCH_FUZZ_COMMANDS", "300"))  # seeded commands a locale (the module's docstring)


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


def seeded_commands(count: int, seed: int = 50) -> list[str]:
    """`count` commands as `commands()` composes them, drawn from a seeded generator: the same list every run."""
    draw = random.Random(seed)
    found = []
    for _ in range(count):
        text = "cat" + draw.choice([" ", "\t"])
        for i in range(draw.randint(1, 4)):
            text += (draw.choice(SEPARATOR_CHOICES) if i else "") + draw.choice(FRAGMENTS)
        found.append(text)
    return found


def classify(command: str, folder: Path) -> str:
    """`read` (the agent's words are bash's), `asked` (not read, and the rule asks), or why it is misclassified."""
    try:
        [words] = read_pipeline(command)
        ours = [words[0].text] + [text for texts in expand_all(words[1:], folder) for text in texts]
    except (Unsupported, ValueError):
        return "run by rule unread" if is_safe(command, folder) else "asked"
    return "read" if bash_words(command, folder) == ours else "read differently"


@pytest.mark.parametrize("name", LOCALES)
def test_a_seeded_sample_has_no_misclassified_command(folder: Path, name: str) -> None:
    sample = seeded_commands(SAMPLE)
    with locale(name):
        kinds = {command: classify(command, folder) for command in sorted(set(sample))}
    counts = {kind: sum(kinds[command] == kind for command in sample) for kind in ("read", "asked")}
    print(f"{name}: {len(sample)} commands ({len(kinds)} distinct): {counts['read']} read, {counts['asked']} asked")
    assert {command: kind for command, kind in kinds.items() if kind not in counts} == {}
    assert counts["read"] and counts["asked"]  # the sample holds both kinds
