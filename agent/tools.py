"""The four tools Flint may call, confined to the repository.

- Paths are relative to the repository or absolute inside it. Anything that resolves outside it (`..`, an absolute
  path elsewhere, a symlink pointing out) is refused, and so is writing inside `.git`.
- Test files that exist at start (test_*.py, *_test.py, conftest.py), and the `__init__.py` and pytest configuration
  files beside them (`protected_paths`), are read-only to write_file and edit_file, and so is any file with more
  than one hard link (writing it would write the other names too).
- read_file shows at most FILE_LIMIT characters, from a line (`offset`, `limit` in lines) or a character
  (`char_offset`, `char_limit`), and names the call that shows the next part; run keeps at most OUTPUT_LIMIT
  characters of output (head and tail, agent/shell.py) and is killed, with its process group, at the timeout.
Whether a command may run at all is decided before run() is called (agent/approval.py); whether the tests are
still as they were is checked after every call (agent/guards.py).
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from agent import prompts
from agent.event_bounds import LONE_SURROGATE
from agent.file_pages import FILE_LIMIT, read_page  # noqa: F401  (FILE_LIMIT: the tools' limits in one place)
from agent.pytest_config import CONFIG_FILES
from agent.reaper import Leftovers
from agent.shell import run_command

MAX_WHOLE_NUMBER = 10**12  # offsets and limits beyond any file the tools read
OUTPUT_LIMIT = 8_000  # characters of command output that run returns (half from the start, half from the end)
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py", "conftest.py")
SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules"}
)
TOOL_ARGS: dict[str, list[str]] = {
    spec["function"]["name"]: spec["function"]["parameters"]["required"] for spec in prompts.TOOL_SPECS
}
OPTIONAL_ARGS: dict[str, list[str]] = {
    spec["function"]["name"]: [
        arg
        for arg in spec["function"]["parameters"]["properties"]
        if arg not in spec["function"]["parameters"]["required"]
    ]
    for spec in prompts.TOOL_SPECS
}


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model (`text`) and what goes in the trace."""

    text: str
    ok: bool = True
    refused: bool = False
    truncated: bool = False
    error: str | None = None


class ToolCallError(Exception):
    """A tool call that cannot be carried out as asked; the message is written for the model."""


def signature(name: str) -> str:
    return f"{name}{{{', '.join(TOOL_ARGS[name])}}}"


def parse_arguments(name: str, raw: object) -> dict[str, Any]:
    """The arguments of a call to a known tool, checked against its argument list (optional ones are numbers)."""
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):  # RecursionError: nested thousands deep, as a degenerate model may
        raise ToolCallError(prompts.bad_arguments(name, "not valid JSON", signature(name))) from None
    if not isinstance(args, dict):
        raise ToolCallError(prompts.bad_arguments(name, "not a JSON object", signature(name)))
    for key in TOOL_ARGS[name]:
        if not isinstance(args.get(key), str):
            raise ToolCallError(prompts.bad_arguments(name, f"{key!r} is missing or not a string", signature(name)))
        if LONE_SURROGATE.search(args[key]):
            raise ToolCallError(prompts.bad_arguments(name, f"{key!r} is not valid text", signature(name)))
    checked: dict[str, Any] = {key: args[key] for key in TOOL_ARGS[name]}
    for key in OPTIONAL_ARGS[name]:
        if args.get(key) is not None:
            checked[key] = _whole_number(name, key, args[key])
    return checked


def _whole_number(tool: str, key: str, value: object) -> int:
    """A count or position; small models often send numbers as strings."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_WHOLE_NUMBER:
        return value
    raise ToolCallError(prompts.bad_arguments(tool, f"{key!r} is not a whole number", signature(tool)))


def is_test_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in TEST_FILE_PATTERNS)


def skipped_dir(folder: str | Path, name: str) -> bool:
    """Folders no scan of the repository looks into: caches, .git, and virtual environments (a folder holding a
    pyvenv.cfg, whatever its name: its interpreter is a link out of the repository, and pytest skips it too)."""
    return name in SKIPPED_DIRS or os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))


def protected_paths(paths: Iterable[str], test_patterns: tuple[str, ...] = ()) -> set[str]:
    """Of the repository's files at start (relative paths), those kept as they are: the test files, and what shapes
    how they run: in every folder holding a test, its `__init__.py`, `conftest.py` and pytest configuration files,
    and the `__init__.py` of every folder above it (importing the test runs them all). With `test_patterns` (another
    language's, --test-patterns), the files they match: by name, or by path from the root when a pattern has a `/`."""
    if test_patterns:
        return {
            p
            for p in paths
            if any(fnmatch.fnmatchcase(p if "/" in t else p.rsplit("/", 1)[-1], t) for t in test_patterns)
        }
    paths = set(paths)
    protected = {p for p in paths if is_test_file(PurePosixPath(p).name)}
    test_folders = {PurePosixPath(p).parent for p in protected if PurePosixPath(p).name != "conftest.py"}
    for folder in test_folders:
        beside = ["__init__.py", *CONFIG_FILES]
        protected |= {p for name in beside if (p := (folder / name).as_posix()) in paths}
        protected |= {p for above in folder.parents if (p := (above / "__init__.py").as_posix()) in paths}
    return protected


def unreadable_paths(root: Path) -> list[str]:
    """Files and folders of the repository that the agent's user cannot read: every scan of the repository, and so
    the done check's copy, leaves them out."""
    found: list[str] = []

    def note(error: OSError) -> None:
        found.append(Path(str(error.filename)).relative_to(root).as_posix())

    effective = os.access in os.supports_effective_ids  # the agent may act as the command user (its effective uid)
    for folder, dirs, files in os.walk(root, onerror=note):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(folder, d))
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path) and not os.access(path, os.R_OK, effective_ids=effective):
                found.append(Path(path).relative_to(root).as_posix())
    return sorted(found)


def repo_files(root: Path) -> Iterator[Path]:
    """Every file of the repository, caches and .git left out, in a stable order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not skipped_dir(folder, d))
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(folder) / name


class Workspace:
    """The repository the agent works in, and the tools that touch it."""

    def __init__(
        self,
        root: Path,
        command_timeout: float,
        leftovers: Leftovers | None = None,
        test_patterns: tuple[str, ...] = (),
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.command_timeout = command_timeout
        self.leftovers = leftovers  # the run's: where the commands' sessions are kept, to end what they leave
        files = [self.relative(p) for p in repo_files(self.root)]
        self.protected = frozenset(protected_paths(files, test_patterns))

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def resolve(self, path: str) -> Path:
        """The real location of `path`, refusing anything outside the repository."""
        real = Path(os.path.realpath(self.root / path))  # an absolute `path` replaces the root here
        if real != self.root and self.root not in real.parents:
            raise ToolCallError(prompts.outside_repo(path))
        return real

    def writable(self, path: str) -> Path:
        real = self.resolve(path)
        relative = self.relative(real)
        if relative.split("/")[0] == ".git":
            raise ToolCallError(prompts.inside_git_dir(path))
        if relative in self.protected:
            raise ToolCallError(prompts.protected_test(relative))
        if real.is_file() and real.stat().st_nlink > 1:  # e.g. `ln test_calc.py h.py`: writing h.py writes the test
            raise ToolCallError(prompts.hard_linked(path))
        return real

    def read_file(self, path: str, **where: int) -> ToolResult:
        real = self.resolve(path)
        if not real.is_file():
            shown = prompts.head(path)
            return _failed(f"Error: {shown} is not a file (to list a folder, call run with: ls {shown})")
        page = read_page(path, real, **where)  # only the page is kept in memory (agent/file_pages.py)
        return ToolResult(page.text, truncated=page.truncated)

    def write_file(self, path: str, content: str) -> ToolResult:
        real = self.writable(path)
        if real.is_dir():
            return _failed(f"Error: {prompts.head(path)} is a folder")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(content, encoding="utf-8")
        return ToolResult(f"Wrote {len(content)} characters to {path}.")

    def edit_file(self, path: str, old: str, new: str) -> ToolResult:
        real = self.writable(path)
        if not real.is_file():
            return _failed(f"Error: {prompts.head(path)} is not a file; create it with write_file")
        text = real.read_text(encoding="utf-8", errors="replace")
        count = text.count(old) if old else 0
        if count != 1:
            return _failed(
                f"Error: the old text occurs {count} times in {path}; it must occur exactly once. "
                "Copy it exactly, with enough surrounding lines to make it unique."
            )
        real.write_text(text.replace(old, new, 1), encoding="utf-8")
        return ToolResult(f"Edited {path}: replaced {len(old)} characters with {len(new)}.")

    def run(self, command: str) -> ToolResult:
        output = run_command(command, self.root, self.command_timeout, OUTPUT_LIMIT, leftovers=self.leftovers)
        shown = output.text if not output.text or output.text.endswith("\n") else output.text + "\n"
        if output.exit_code is None:
            note = prompts.command_timed_out(self.command_timeout)
            return ToolResult(shown + note, ok=False, truncated=output.truncated, error="timeout")
        return ToolResult(
            f"{shown}[exit code {output.exit_code}]", ok=output.exit_code == 0, truncated=output.truncated
        )

    def end_leftovers(self) -> None:
        """End every process the commands left running (before a done check: nothing of theirs may run then)."""
        if self.leftovers is not None:
            self.leftovers.end_all()

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Carry out a checked call; a path the rules refuse becomes a refused result, not an exception."""
        try:
            if name == "read_file":
                return self.read_file(args["path"], **{k: v for k, v in args.items() if k != "path"})
            if name == "write_file":
                return self.write_file(args["path"], args["content"])
            if name == "edit_file":
                return self.edit_file(args["path"], args["old"], args["new"])
            return self.run(args["command"])
        except ToolCallError as e:
            return ToolResult(str(e), ok=False, refused=True, error=str(e))
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in a path
            return _failed(f"Error: {getattr(e, 'strerror', None) or e} ({prompts.head(str(args.get('path', '')))})")


def _failed(text: str) -> ToolResult:
    return ToolResult(text, ok=False, error=text)


def summarize_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments for the trace: file text replaced by its length, as clearing does."""
    return {k: len(v) if k in ("content", "old", "new") and isinstance(v, str) else v for k, v in args.items()}
