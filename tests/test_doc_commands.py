"""Every `bench ...` command line that README.md and docs/*.md show is one the real parser takes: the command and
subcommand exist, every flag is one of theirs, and every value given for a typed flag has that type. A code block's
line with nothing left to fill in (no [optional] part, no `a|b`, no NAME to replace) must parse whole, as a user
would type it; an inline mention (`bench compare`) names a command and may leave its arguments out. So the docs
cannot drift from the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from bench.cli import build_parser
from bench.cli.run import run_flags

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PREFIXES = (".venv/bin/bench ", "python -m bench ", "bench ")
FENCE = re.compile(r"^\s*```")
INLINE = re.compile(r"`([^`\n]+)`")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*([./:-][A-Z0-9_a-z*]*)*(\.\.\.)?$|<|\.\.\.|^\$\(")
SHELL_SUBSTITUTION = re.compile(r"\$\([^)]*\)")


def command_lines(text: str) -> list[tuple[str, bool]]:
    """The bench command lines of a page, each with whether it is a code block's line (else an inline mention):
    code blocks' lines joined across `\\` and across the indented `[...]` lines of a synopsis, each from `bench`
    on, without a trailing comment."""
    found, block, inside = [], [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if inside:
            block.append(line)
        else:
            found += [span for span in INLINE.findall(line) if span.startswith(PREFIXES)]
    joined: list[str] = []
    for line in block:
        stripped = line.strip().removeprefix("$ ")
        stripped = stripped.split(" && ", 1)[1] if " && bench " in stripped else stripped  # `cd DIR && bench ...`
        if joined and (joined[-1].endswith("\\") or (line.startswith(" ") and stripped.startswith("["))):
            joined[-1] = joined[-1].rstrip("\\").rstrip() + " " + stripped
        elif stripped.startswith(PREFIXES):
            joined.append(stripped)
    return [(strip_comment(line), False) for line in found] + [(strip_comment(line), True) for line in joined]


def strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).strip()


def words(line: str) -> list[str]:
    for prefix in PREFIXES:
        if line.startswith(prefix):
            line = line[len(prefix) :]
            break
    return shlex.split(SHELL_SUBSTITUTION.sub("RESULTS.csv", line))


def is_synopsis(tokens: list[str]) -> bool:
    return any(t.startswith("[") or "|" in t or PLACEHOLDER.search(t) for t in tokens)


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
    return dict(found[0].choices) if found else {}


def problems_of(tokens: list[str], parser: argparse.ArgumentParser, where: str) -> list[str]:
    """What is wrong with `tokens` for `parser`, word by word: unknown commands and flags, values of the wrong type."""
    tokens = [t.strip("[]") for t in tokens if t.strip("[]") not in ("", "...")]
    index, positionals = 0, positional_actions(parser)
    while index < len(tokens):
        token = tokens[index]
        commands = subparsers(parser)
        if token == "--" and where.startswith("bench submit"):
            return problems_of(tokens[index + 1 :], run_parser(), "the run flags of " + where)
        if token.startswith("-"):
            problem, index = flag_problem(tokens, index, parser, where)
            if problem:
                return [problem]
            continue
        if commands:
            choices = token.split("|")
            unknown = [c for c in choices if c not in commands]
            if unknown:
                return [f"{where}: no command {unknown[0]!r} (there are {', '.join(commands)})"]
            rest = tokens[index + 1 :]
            return [p for c in choices for p in problems_of(rest, commands[c], f"{where} {c}")]
        choices = positionals[0].choices if positionals else None
        if choices is not None and not PLACEHOLDER.search(token) and token not in choices:
            return [f"{where}: {token!r} is not one of {list(choices)}"]
        if positionals and positionals[0].nargs in (None, "?"):
            positionals = positionals[1:]  # one word each; `+` and `*` take the rest
        index += 1
    return []


def positional_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001


def flag_problem(tokens: list[str], index: int, parser: argparse.ArgumentParser, where: str) -> tuple[str, int]:
    flag, _, inline = tokens[index].partition("=")
    action = parser._option_string_actions.get(flag)  # noqa: SLF001
    if action is None:
        return f"{where}: no flag {flag}", index + 1
    if action.nargs == 0:
        return "", index + 1
    value = inline or (tokens[index + 1] if index + 1 < len(tokens) else "")
    step = 1 if inline else 2
    for alternative in value.split("|"):
        if not alternative or PLACEHOLDER.search(alternative):
            continue
        if action.choices is not None and alternative not in action.choices:
            return f"{where}: {flag} {alternative!r} is not one of {list(action.choices)}", index + step
        if callable(action.type):
            try:
                action.type(alternative)
            except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
                return f"{where}: {flag} {alternative!r}: {e}", index + step
    return "", index + step


def run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench run")
    run_flags(parser)
    return parser


def parses_whole(tokens: list[str]) -> str:
    """Empty when the real parser takes the line as it stands; else what argparse said."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            build_parser().parse_args(tokens)
        except SystemExit as e:
            return "" if e.code == 0 else err.getvalue().strip().splitlines()[-1]
    return ""


LINES = [(page.relative_to(ROOT).as_posix(), *found) for page in PAGES for found in command_lines(page.read_text())]


def test_the_pages_show_bench_commands() -> None:
    assert len(LINES) > 50  # the extraction finds them (README and docs hold about seventy)
    assert {line.split()[1] for _, line, _ in LINES if line.startswith("bench ")} >= {"run", "compare", "report"}
    assert sum(block for _, _, block in LINES) > 25  # and the code blocks' lines among them


@pytest.mark.parametrize(("page", "line", "block"), LINES)
def test_a_documented_command_line_is_one_the_parser_takes(page: str, line: str, block: bool) -> None:
    tokens = words(line)
    problems = problems_of(tokens, build_parser(), "bench")
    assert not problems, f"{page}: {line}: {problems[0]}"
    if block and not is_synopsis(tokens):
        said = parses_whole(tokens)
        assert not said, f"{page}: {line}: {said}"


@pytest.mark.parametrize(
    ("line", "wrong"),
    [
        ("bench run --ctx big", "--ctx 'big'"),
        ("bench run [--ctx 4096,,8192]", "empty item"),
        ("bench compare a.csv --fail-under 3", "no flag --fail-under"),
        ("bench compares a.csv", "no command 'compares'"),
        ("bench up|dwn", "no command 'dwn'"),
        ("bench fixtures import cargo SRC --into DIR", "'cargo' is not one of"),
        ("bench submit slurm --shards N -- --presets part2 --reps many", "--reps 'many'"),
    ],
)
def test_a_wrong_line_is_caught(line: str, wrong: str) -> None:
    problems = problems_of(words(line), build_parser(), "bench")
    assert problems and wrong in problems[0], problems


def test_a_concrete_line_must_parse_whole() -> None:
    assert parses_whole(words("bench merge a.csv")) == "bench merge: error: the following arguments are required: --out"
    assert parses_whole(words("bench merge a.csv --out m.csv")) == ""
