"""Which shell commands run without asking: only those that read, or run the tests, and cannot write files.

A command runs by rule when agent/shell_words.py can read it exactly as bash will (anything it does not model needs
approval: `;`, `&`, `&&`, `||`, redirections other than `2>&1`, `$`, backquotes, comments, `~`, braces, brackets,
line breaks, ...), and when every command of its pipeline is one of the programs in PROGRAMS, given only the
options listed for it, with every path it names inside the repository (after globs and symlinks):

    ls, cat, head, tail, grep, wc, find (tests and -print only: no -exec, -delete, -fprint, -L),
    pytest, python -m pytest, python3 -m pytest, git status|diff|log|show

Options are allowed by name, so an option that writes a file, reads its value from a file, follows symlinks out of
the repository or loads code (pytest's --junitxml, --basetemp, -p, -c, -o, --rootdir, grep's -f and -R, wc's
--files0-from, git's --output and --no-index, ...) needs approval, and so does any abbreviation. A short option
that takes a value is accepted alone (`-n 5`) or with its value attached (`-n5`), never inside a bundle (`-hf/x`),
whose value would be hidden. A value in the next word may not start with `-`. pytest reads arguments from a file
named `@file`: a word starting with `@` needs approval, as does a glob match that starts with `-` or `@` (a file
named `--basetemp=..` must not become an option). A by-rule pytest needs the repository to hold its own pytest
configuration when a folder above it holds one (or a setup.py or pyproject.toml): pytest would read that one, and
write its cache there; and it needs the repository to hold no link leading out of it, which pytest would follow
as it collects. Paths are judged both as the kernel reads them and lexically, as pytest reads its arguments.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent.check_copy import links_out
from agent.pytest_config import reaches_above
from agent.rule_options import (
    CAT,
    FIND_OPERATORS,
    FIND_PLAIN,
    FIND_VALUED,
    GIT,
    GREP,
    HEAD,
    LS,
    PATH,
    PYTEST,
    TEXT,
    WC,
    Options,
)
from agent.shell_words import Unsupported, Word, expand_all, read_pipeline


class NotSafe(Exception):
    """This command does not run by rule."""


def is_safe(command: str, repo: Path) -> bool:
    """True when the command only reads inside `repo` or runs its tests, by the rules above."""
    root = Path(os.path.realpath(repo))
    try:
        pipeline = read_pipeline(command)
        for words in pipeline:
            _check_command(words, root)
    except (Unsupported, NotSafe):
        return False
    return True


@dataclass(frozen=True)
class _Argument:
    text: str
    from_glob: bool


def _check_command(words: list[Word], root: Path) -> None:
    if words[0].pattern is not None:
        raise NotSafe("the program is a glob")
    program = words[0].text
    expanded = zip(words[1:], expand_all(words[1:], root), strict=True)
    args = [_Argument(text, word.pattern is not None) for word, texts in expanded for text in texts]
    for arg in args:
        if arg.from_glob and arg.text.startswith(("-", "@")):
            raise NotSafe("a glob match that would read as an option")
    checker = _PROGRAMS.get(program)
    if checker is None:
        raise NotSafe(f"{program} is not a program that runs by rule")
    checker(args, root)


def _check_plain(options: Options) -> Callable[[list[_Argument], Path], None]:
    def check(args: list[_Argument], root: Path) -> None:
        for operand in _operands(args, options, root):
            _require_inside(operand.text, root)

    return check


def _check_grep(args: list[_Argument], root: Path) -> None:
    operands, seen = _parse(args, GREP, root)
    if not seen & {"e", "--regexp"}:  # the first operand is the pattern, not a file
        if not operands or operands[0].from_glob:
            raise NotSafe("grep's pattern must be a word of its own")
        operands = operands[1:]
    for operand in operands:
        _require_inside(operand.text, root)


def _check_pytest(args: list[_Argument], root: Path) -> None:
    if any(arg.text.startswith("@") for arg in args):  # pytest reads more arguments from the file @name
        raise NotSafe("pytest @file")
    if reaches_above(root):  # it would read a configuration, or write its cache, outside the repository
        raise NotSafe("pytest would take its configuration or rootdir from above the repository")
    if links_out(root):  # pytest follows links to folders as it collects: it would run what lies behind them
        raise NotSafe("a link in the repository leads out of it")
    for operand in _operands(args, PYTEST, root):
        _require_inside(operand.text, root)


def _check_python(args: list[_Argument], root: Path) -> None:
    if [a.text for a in args[:2]] != ["-m", "pytest"]:
        raise NotSafe("python runs by rule only as python -m pytest")
    _check_pytest(args[2:], root)


def _check_git(args: list[_Argument], root: Path) -> None:
    if not args or args[0].text not in GIT:
        raise NotSafe("git runs by rule only as git status, diff, log or show")
    for operand in _operands(args[1:], GIT[args[0].text], root):  # revisions are checked as paths: harmless
        _require_inside(operand.text, root)


def _check_find(args: list[_Argument], root: Path) -> None:
    position = 0
    while position < len(args) and not _starts_find_expression(args[position].text):
        _require_inside(args[position].text, root)  # a starting point
        position += 1
    while position < len(args):
        word = args[position].text
        if word in FIND_VALUED:
            position += 1
            if position == len(args):
                raise NotSafe(f"find {word} without its value")
            if FIND_VALUED[word] == PATH:
                _require_inside(args[position].text, root)
        elif word not in FIND_OPERATORS and word not in FIND_PLAIN:
            raise NotSafe(f"find {word}")
        position += 1


def _starts_find_expression(word: str) -> bool:
    return word.startswith("-") or word in FIND_OPERATORS


def _operands(args: list[_Argument], options: Options, root: Path) -> list[_Argument]:
    return _parse(args, options, root)[0]


def _parse(args: list[_Argument], options: Options, root: Path) -> tuple[list[_Argument], set[str]]:
    """The operands, and the names of the options seen; NotSafe for an option not in `options`. Values of PATH
    options are checked here. Options may come after operands (GNU tools and argparse both allow it)."""
    operands: list[_Argument] = []
    seen: set[str] = set()
    position = 0
    while position < len(args):
        word = args[position].text
        value: str | None = None
        if word == "--":
            operands += args[position + 1 :]
            break
        if word == "-" or not word.startswith("-"):
            operands.append(args[position])
        elif options.numeric and word[1:].isdigit():
            pass
        else:
            name, kind, value = _option(word, options)
            seen.add(name)
            if kind is not None and value is None:  # the value is the next word
                position += 1
                if position == len(args) or args[position].text.startswith("-"):
                    raise NotSafe(f"{name} without a value")
                value = args[position].text
            if kind == PATH and value is not None:
                _require_inside(value, root)
        position += 1
    return operands, seen


def _option(word: str, options: Options) -> tuple[str, str | None, str | None]:
    """(name, kind of its value or None, the value when attached) for one option word; NotSafe if not allowed."""
    if word.startswith("--"):
        name, equals, attached = word.partition("=")
        if name in options.long_valued:
            return name, options.long_valued[name], attached if equals else None
        if name in options.long_attached and equals:
            return name, TEXT, attached
        if name in options.long_flags and not equals:
            return name, None, None
        raise NotSafe(f"the option {name}")
    letter, rest = word[1], word[2:]
    if letter in options.valued:
        return letter, options.valued[letter], rest or None
    if all(char in options.flags for char in word[1:]):
        return word[1:], None, None
    raise NotSafe(f"the option {word}")


def _require_inside(path: str, root: Path) -> None:
    """The path must stay inside both as the kernel reads it (links first, then `..`) and as pytest reads it
    (`..` first, lexically): through a link to a folder inside, `link/../..` is the repository to the kernel and
    its parent to pytest."""
    joined = os.path.join(root, path)  # an absolute path replaces the root here
    for where in (Path(os.path.realpath(joined)), Path(os.path.normpath(joined))):
        if where != root and root not in where.parents:
            raise NotSafe(f"{path} is outside the repository")


_PROGRAMS: dict[str, Callable[[list[_Argument], Path], None]] = {
    "ls": _check_plain(LS),
    "cat": _check_plain(CAT),
    "head": _check_plain(HEAD),
    "tail": _check_plain(HEAD),
    "wc": _check_plain(WC),
    "grep": _check_grep,
    "find": _check_find,
    "pytest": _check_pytest,
    "python": _check_python,
    "python3": _check_python,
    "git": _check_git,
}

PROGRAMS_RUN_BY_RULE = frozenset(_PROGRAMS)
