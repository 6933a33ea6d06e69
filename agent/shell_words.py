"""Reading a command line the way bash reads it, for the small part of bash that the safe-command rule accepts.

The rule (agent/rules.py) may only judge a command whose words it knows exactly. This reader follows bash's own
rules for that subset and raises Unsupported for anything else, so the command asks for approval:

- Words are split at unquoted blanks (space, tab). `|` joins the commands of a pipeline; `2>&1` as a word of its
  own is the only redirection. Every other metacharacter (`;`, `&`, `(`, `)`, `<`, `>`) is unsupported, and so is
  `||`, `|&`, a line break, and an empty command.
- `'...'` is literal; in `"..."` a backslash quotes only `"` and `\\` here (otherwise it stays); an unquoted
  backslash quotes the next character. `$` and backquotes (expansions of every kind) are unsupported anywhere
  outside single quotes, even after a backslash.
- `#` starts a comment only at the start of a word (bash's rule; `a#b` is one word); a comment is unsupported.
- `~` is expanded by bash at the start of a word and after an unquoted `=` or `:` (`~`, `~-`, `~+`, `a=~`): there it
  is unsupported; elsewhere (`HEAD~1`) it is literal.
- Unquoted braces (brace expansion), `[` (bracket globs, whose meaning differs between shells), `!(`-style extended
  globs (they need `(`), and any character not in WORD_CHARACTERS are unsupported. `*` and `?` are globs: bash
  itself expands them (expand_all), in the environment the commands get, so what `?` matches (a byte in the C
  locale, a character in a UTF-8 one) and the order of the matches are bash's. Hidden files need a leading `.`,
  which is unsupported in a glob so that `.?` can never match `..`.
- Quoted text may hold any printable character; control characters (and lone surrogates) are unsupported.
"""

from __future__ import annotations

import glob
import os
import shlex
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path

from agent.command_user import drop_to_command_user
from agent.shell import command_environment, shell

BLANKS = " \t"
# `#` is here because a word never starts with it: read_pipeline refuses a comment before a word begins.
WORD_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-_./:=,+@%^!~#")
GLOB_CHARACTERS = frozenset("*?")
DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\')
MERGED_STDERR = "2>&1"
MAX_GLOB_MATCHES = 1_000
GLOB_SECONDS = 5.0  # bash listing a few folders; longer means something is wrong, and the command asks instead


class Unsupported(ValueError):
    """The command uses shell syntax this reader does not model; the message says which."""


@dataclass(frozen=True)
class Word:
    text: str  # the word after quote removal
    pattern: str | None = None  # the glob bash would expand (quoted glob characters escaped), None for no glob
    bash: str | None = None  # the glob as a bash word: its literal parts single-quoted, `*` and `?` bare


def read_pipeline(command: str) -> list[list[Word]]:
    """The commands of a pipeline, each as its words (2>&1 left out), or Unsupported."""
    pipeline: list[list[Word]] = [[]]
    reader = _Reader(command)
    while not reader.at_end():
        char = reader.peek()
        if char in BLANKS:
            reader.advance()
        elif char == "|":
            reader.advance()
            if not pipeline[-1] or reader.peek() in ("|", "&"):
                raise Unsupported("`||`, `|&` or an empty command in a pipeline")
            pipeline.append([])
        elif reader.starts_word(MERGED_STDERR):
            reader.advance(len(MERGED_STDERR))
        elif char == "#":
            raise Unsupported("a comment (`#` at the start of a word)")
        else:
            pipeline[-1].append(reader.word())
    if not pipeline[-1]:
        raise Unsupported("an empty command")
    return pipeline


class _Reader:
    def __init__(self, command: str) -> None:
        self.command = command
        self.position = 0

    def at_end(self) -> bool:
        return self.position >= len(self.command)

    def peek(self) -> str:
        return self.command[self.position] if not self.at_end() else ""

    def advance(self, count: int = 1) -> None:
        self.position += count

    def starts_word(self, token: str) -> bool:
        """`token` stands here as a word of its own (followed by a blank, `|` or the end)."""
        end = self.position + len(token)
        return self.command.startswith(token, self.position) and (
            end == len(self.command) or self.command[end] in " \t|"
        )

    def word(self) -> Word:
        """Read one word: (character, quoted) pairs until an unquoted blank or `|`."""
        chars: list[tuple[str, bool]] = []
        while not self.at_end() and self.peek() not in BLANKS and self.peek() != "|":
            char = self.peek()
            self.advance()
            if char == "'":
                chars += [(c, True) for c in self.until("'")]
            elif char == '"':
                chars += [(c, True) for c in self.double_quoted()]
            elif char == "\\":
                chars.append((self.quoted_character(), True))
            elif char == "~" and (not chars or chars[-1][0] in "=:"):
                raise Unsupported("`~` where bash expands it")
            elif char in GLOB_CHARACTERS or char in WORD_CHARACTERS:
                chars.append((char, False))
            else:
                raise Unsupported(f"the character {char!r} outside quotes")
        return _make_word(chars)

    def until(self, closing: str) -> str:
        end = self.command.find(closing, self.position)
        if end < 0:
            raise Unsupported("an unclosed quote")
        text = self.command[self.position : end]
        self.position = end + 1
        _check_printable(text)
        return text

    def double_quoted(self) -> str:
        text = []
        while True:
            if self.at_end():
                raise Unsupported("an unclosed quote")
            char = self.peek()
            self.advance()
            if char == '"':
                break
            if char in "$`":
                raise Unsupported("`$` or a backquote outside single quotes")
            if char == "\\" and self.peek() in DOUBLE_QUOTE_ESCAPES:
                char = self.quoted_character()
            text.append(char)
        joined = "".join(text)
        _check_printable(joined)
        return joined

    def quoted_character(self) -> str:
        if self.at_end():
            raise Unsupported("a backslash at the end")
        char = self.peek()
        self.advance()
        if char in "$`":  # a literal `$` is harmless, but one rule is easier to trust: none outside single quotes
            raise Unsupported("`$` or a backquote outside single quotes")
        _check_printable(char)
        return char


def _check_printable(text: str) -> None:
    if not text.isprintable():
        raise Unsupported("a control character or an invalid character in quotes")


def _make_word(chars: list[tuple[str, bool]]) -> Word:
    text = "".join(c for c, _ in chars)
    if not any(c in GLOB_CHARACTERS and not quoted for c, quoted in chars):
        return Word(text)
    pattern = "".join(glob.escape(c) if quoted else c for c, quoted in chars)
    if any(part.startswith(".") for part in pattern.split("/") if GLOB_CHARACTERS & set(part)):
        raise Unsupported("a glob over hidden files (a glob part that starts with `.`)")
    bash = "".join(c if c in GLOB_CHARACTERS and not quoted else shlex.quote(c) for c, quoted in chars)
    return Word(text, pattern, bash)


def expand(word: Word, cwd: Path) -> list[str]:
    """The words bash makes of `word` in `cwd`: its glob matches in bash's order, or the word itself when nothing
    matches."""
    return expand_all([word], cwd)[0]


def expand_all(words: list[Word], cwd: Path) -> list[list[str]]:
    """What `expand` gives for each of `words`, with one bash for all the globs among them (`printf '%s\\0'` of
    each, an empty entry after each); Unsupported when bash cannot say."""
    globs = [word for word in words if word.bash is not None]
    if not globs:
        return [[word.text] for word in words]
    script = "".join(f"printf '%s\\0' {word.bash}; printf '\\0'\n" for word in globs)
    try:
        done = subprocess.run(
            [shell(), "-c", script],
            cwd=cwd,
            env=command_environment(cwd),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GLOB_SECONDS,
            preexec_fn=drop_to_command_user(),  # it lists folders as the command would
        )
    except (OSError, subprocess.SubprocessError):
        raise Unsupported("bash could not expand the globs") from None
    groups = _groups(done.stdout) if done.returncode == 0 else []
    if len(groups) != len(globs) or not all(groups):
        raise Unsupported("bash's expansion of the globs cannot be read")
    if any(len(group) > MAX_GLOB_MATCHES for group in groups):
        raise Unsupported(f"a glob with more than {MAX_GLOB_MATCHES} matches")
    expanded = iter(groups)
    return [next(expanded) if word.bash is not None else [word.text] for word in words]


def _groups(output: bytes) -> list[list[str]]:
    """The groups of NUL-terminated entries, each closed by an empty entry ([] when the output is not so made)."""
    if not output.endswith(b"\0\0"):
        return []
    groups: list[list[str]] = [[]]
    for entry in output[:-2].split(b"\0"):
        if entry:
            groups[-1].append(os.fsdecode(entry))
        else:
            groups.append([])
    return groups
