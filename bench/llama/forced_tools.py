"""Forced tool calls: how a model that never calls tools (the 135M model on CPU) is served so that every answer is one.

Only the server changes; the agent's request stays an ordinary chat request with `tools` (the pinned build's behaviour):
- a chat template (docker/flint-forced-tools.jinja) that renders a call as `<function=NAME>{JSON}` with nothing
  before it, one call per message, so llama.cpp parses such an answer into `tool_calls`;
- a server-wide GBNF grammar (`--grammar-file`, which applies because the agent sends no grammar of its own) that
  lets the model write nothing else: one of the agent's four tools with its required keys.

The grammar also picks the arguments, so that tool results have real content: read_file and write_file/edit_file
paths are the fixtures' own files (a file larger than a quarter of the window is read a part at a time, through
read_file's optional offset and limit), and `run` commands come from a short list of real ones (the tests, ls, git,
cat of a small file), on which Jeff gives real opinions. Free text (file contents, edit strings) is bounded by
string_bound(ctx), so one call always fits the window.

Every answer is a tool call, so a run in this mode ends at the step limit or when the window is exhausted, never
with "done"; rows record it in the `flint_serving` column, and compare never mixes them with a real model's rows.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.fixtures.fixture import Fixture, fixture_files
from bench.results.schema import FORCED_SERVING, NATIVE_SERVING

TEMPLATE = Path("docker/flint-forced-tools.jinja")  # in the checkout
# Empty template and grammar files: to llama-server, the model's own template and no grammar. compose.yaml's cpu
# profile always names both files (one command line serves both modes) and mounts this folder by default.
NATIVE_DIR = Path("docker/flint-native")  # in the checkout
TEMPLATE_NAME, GRAMMAR_NAME = "flint.jinja", "flint.gbnf"

# The values of the results column `flint_serving`: the model's own template and no grammar (whatever the model
# answers), or the template and grammar here.
NATIVE, FORCED = NATIVE_SERVING, FORCED_SERVING

CHARS_PER_TOKEN = 3  # a low estimate for code and English, so parts of files come out a little small, never big
COMMANDS = ("pytest -q", "ls", "git status --short", "git diff --stat", "git log --oneline")


def string_bound(ctx: int) -> int:
    """The most characters a free-text argument may hold: ctx/20, at least 40 (40 at 512, 102 at 2048, 204 at
    4096). At about 3 characters per token, an edit_file call with both strings full takes about 1/30 of the
    window, so a call fits next to a prompt that leaves room for it."""
    return max(40, ctx // 20)


def part_chars(ctx: int) -> int:
    """The most characters one read (or `cat`) shows: about a quarter of the window."""
    return ctx * CHARS_PER_TOKEN // 4


@dataclass(frozen=True)
class RepoFile:
    path: str  # relative to the repository root, with /
    chars: int
    lines: int


def repo_files(fixtures: Sequence[Fixture]) -> list[RepoFile]:
    """The text files the agent receives in any of the fixtures, by path (the largest version of a shared path)."""
    found: dict[str, RepoFile] = {}
    for fixture in fixtures:
        for rel in fixture_files(fixture):
            try:
                text = (fixture.path / rel).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary files: nothing a tool call could show
            file = RepoFile(rel.as_posix(), len(text), text.count("\n") + (not text.endswith("\n")))
            if file.path not in found or file.chars > found[file.path].chars:
                found[file.path] = file
    return [found[path] for path in sorted(found)]


def literal(text: str) -> str:
    """A GBNF string literal that matches exactly `text`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def json_string(text: str) -> str:
    """A GBNF literal for `text` written as a JSON string, as the agent's json.loads will read it."""
    return literal(json.dumps(text))


def choice(options: Sequence[str]) -> str:
    return " | ".join(options)


def read_arguments(file: RepoFile, ctx: int) -> list[str]:
    """read_file arguments for one file: the whole file when it is small, else its parts, each one read."""
    path = json_string(file.path)
    if file.chars <= part_chars(ctx) or file.lines <= 1:
        return [f'"{{\\"path\\": " {path} "}}"']
    lines_per_part = max(1, part_chars(ctx) * file.lines // file.chars)
    starts = [str(line) for line in range(1, file.lines + 1, lines_per_part)]
    offsets = f"({choice([literal(s) for s in starts])})"
    return [f'"{{\\"path\\": " {path} ", \\"offset\\": " {offsets} ", \\"limit\\": {lines_per_part}}}"']


def grammar(ctx: int, files: Sequence[RepoFile]) -> str:
    """The GBNF that makes every answer one tool call with arguments from `files`, for a `ctx`-token window."""
    if not files:
        raise ValueError("forced tool calls need at least one repository file to offer")
    small = [f.path for f in files if f.chars <= part_chars(ctx)]
    commands = [*COMMANDS, *(f"cat {path}" for path in small)]
    reads = [arguments for file in files for arguments in read_arguments(file, ctx)]
    rules = {
        "root": '"<function=" ( read | write | edit | run )',
        "read": f'"read_file>" ( {choice(reads)} )',
        "write": '"write_file>{\\"path\\": " path ", \\"content\\": " text "}"',
        "edit": '"edit_file>{\\"path\\": " path ", \\"old\\": " text ", \\"new\\": " text "}"',
        "run": '"run>{\\"command\\": " command "}"',
        "path": choice([json_string(f.path) for f in files]),
        "command": choice([json_string(c) for c in commands]),
        "text": f'"\\"" char{{0,{string_bound(ctx)}}} "\\""',
        # Any character JSON allows unescaped, or an escaped quote, backslash, newline or tab.
        "char": '[^"\\\\\\x00-\\x1F] | "\\\\" ["\\\\nt]',
    }
    header = f"# Forced tool calls for a {ctx}-token window (bench/llama/forced_tools.py); generated, not edited.\n"
    return header + "".join(f"{name} ::= {body}\n" for name, body in rules.items())


@dataclass(frozen=True)
class ServingFiles:
    """The template and grammar of forced-tools mode, written for one window into one folder (mounted as a whole
    into the compose container)."""

    folder: Path
    template: Path
    grammar: Path

    def llama_args(self, root: Path | None = None) -> list[str]:
        """llama-server's flags for these files; `root`: where the folder is seen by the server (a mount)."""
        where = root or self.folder
        return [
            "--jinja",
            "--chat-template-file",
            str(where / TEMPLATE_NAME),
            "--grammar-file",
            str(where / GRAMMAR_NAME),
        ]


def write_serving_files(folder: Path, ctx: int, fixtures: Sequence[Fixture], checkout: Path) -> ServingFiles:
    """Write the template (`checkout`'s: this repository's) and the grammar for `ctx` and the plan's fixtures into
    `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    template, grammar_file = folder / TEMPLATE_NAME, folder / GRAMMAR_NAME
    shutil.copyfile(checkout / TEMPLATE, template)
    grammar_file.write_text(grammar(ctx, repo_files(fixtures)))
    return ServingFiles(folder, template, grammar_file)
