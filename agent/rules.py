"""Which shell commands run without asking: only those that read, or run the tests, and cannot write files.

A command runs by rule when every part of its pipeline is one of: ls, cat, head, tail, grep, wc, find (without
actions that run, delete or write), pytest or python/python3 -m pytest (with the options below only),
git status/diff/log/show (without --output); when every path it names stays inside the repository (after `~`,
globs and symlinks); and when bash cannot expand anything in it (no `$`, backquotes or braces outside single
quotes). Parts may be joined by `|`, and `2>&1` is allowed. Anything else, including `;`, `&`, `&&`, `||` and other
redirections, needs approval.

pytest's options are allowed by name: the ones that only choose, show or stop tests. Everything else needs approval,
among them the ones that write files or load code: --junitxml, --basetemp, -p, --rootdir, -o/--override-ini,
--confcutdir, --resultlog, --debug, -c, --log-file (and abbreviations, which pytest's parser may accept).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from pathlib import Path

SAFE_PROGRAMS = frozenset({"ls", "cat", "head", "tail", "grep", "wc"})
FIND_ACTIONS = frozenset({"-exec", "-execdir", "-delete", "-ok", "-okdir", "-fls"})  # and -fprint*
GIT_READ_ONLY = frozenset({"status", "diff", "log", "show"})
MERGED_STDERR = re.compile(r"(?<!\S)2>&1(?!\S)")
SHELL_PUNCTUATION = frozenset("();<>|&")
GLOB_CHARACTERS = frozenset("*?[")

# pytest options that neither write files nor load code. Short ones may be bundled (-qx); a valued one ends the
# bundle, its value attached (-kadd) or in the next word (-k add).
PYTEST_SHORT_FLAGS = frozenset("qvxslhV")
PYTEST_SHORT_VALUED = frozenset("kmr")
PYTEST_LONG_FLAGS = frozenset(
    {"--quiet", "--verbose", "--exitfirst", "--showlocals", "--last-failed", "--lf", "--failed-first", "--ff",
     "--new-first", "--nf", "--stepwise", "--sw", "--stepwise-skip", "--collect-only", "--co", "--no-header",
     "--no-summary", "--strict-markers", "--strict", "--fixtures", "--fixtures-per-test", "--markers", "--help",
     "--version", "--full-trace", "--disable-warnings", "--runxfail", "--setup-show", "--setup-plan",
     "--cache-show", "--doctest-modules"}
)  # fmt: skip
PYTEST_LONG_VALUED = frozenset(
    {"--tb", "--maxfail", "--durations", "--durations-min", "--color", "--code-highlight", "--capture",
     "--show-capture", "--deselect", "--ignore", "--ignore-glob", "--import-mode", "--log-level",
     "--log-cli-level", "--assert", "--verbosity"}
)  # fmt: skip


def is_safe(command: str, repo: Path) -> bool:
    """True when the command only reads inside `repo` or runs its tests, by the rules above."""
    if "\n" in command or "\r" in command or _expands(command):
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
    root = Path(os.path.realpath(repo))
    return all(segment and _safe_program(segment) and _paths_inside(segment[1:], root) for segment in segments)


def _expands(command: str) -> bool:
    """True when bash might substitute something: `$`, a backquote, or (unquoted) a brace or a backslash, which
    would also make our reading of the quotes differ from bash's."""
    quote = None
    escaped = False
    for char in command:
        if escaped:  # the character after a backslash inside double quotes
            escaped = False
        elif quote == "'":
            quote = None if char == "'" else quote
        elif char in "$`":
            return True
        elif quote == '"':
            quote, escaped = (None if char == '"' else quote), char == "\\"
        elif char in "{}\\":
            return True
        elif char in "'\"":
            quote = char
    return False


def _safe_program(words: list[str]) -> bool:
    program, rest = words[0], words[1:]
    if program in SAFE_PROGRAMS:
        return True
    if program == "pytest":
        return _safe_pytest_options(rest)
    if program in ("python", "python3"):
        return rest[:2] == ["-m", "pytest"] and _safe_pytest_options(rest[2:])
    if program == "find":
        return not any(w in FIND_ACTIONS or w.startswith("-fprint") for w in rest)
    if program == "git":  # `git diff --output=FILE` writes a file
        return bool(rest) and rest[0] in GIT_READ_ONLY and not any(w.startswith("--output") for w in rest)
    return False


def _safe_pytest_options(args: list[str]) -> bool:
    for word in args:
        if word.startswith("--"):
            name, has_value, _ = word.partition("=")
            if not (name in PYTEST_LONG_VALUED or (name in PYTEST_LONG_FLAGS and not has_value)):
                return False
        elif word.startswith("-") and word != "-":
            for char in word[1:]:
                if char in PYTEST_SHORT_VALUED:
                    break  # the rest of the word, or the next word, is its value
                if char not in PYTEST_SHORT_FLAGS:
                    return False
    return True


def _paths_inside(words: list[str], root: Path) -> bool:
    """Every word that could name a path (an argument, or an option's attached value) resolves inside `root`."""
    for word in words:
        if word.startswith("--"):
            word = word.partition("=")[2]
        elif word.startswith("-"):
            word = word[2:]  # `-f/etc/x`: a short option with its value attached
        if word and not _inside(word, root):
            return False
    return True


def _inside(word: str, root: Path) -> bool:
    path = os.path.expanduser(word)
    candidates = [os.path.join(root, path)]  # an absolute path replaces the root here
    if GLOB_CHARACTERS & set(path):
        candidates += glob.glob(candidates[0], recursive=True)
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if real != root and root not in real.parents:
            return False
    return True
