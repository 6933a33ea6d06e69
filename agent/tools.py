"""The four tools Flint may call, confined to the repository.

- Paths are relative to the repository or absolute inside it. Anything that resolves outside it (`..`, an absolute
  path elsewhere, a symlink pointing out) is refused, and so is writing inside `.git`.
- Test files that exist at start (test_*.py, *_test.py, conftest.py) are read-only to write_file and edit_file.
- read_file shows at most FILE_LIMIT characters and says how to read on; run shows at most OUTPUT_LIMIT characters
  of output (head and tail) and is killed, with its whole process group, after the command timeout.
Whether a command may run at all is decided before run() is called (agent/approval.py).
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import prompts

FILE_LIMIT = 12_000  # characters of a file that read_file returns
OUTPUT_LIMIT = 8_000  # characters of command output that run returns (half from the start, half from the end)
TEST_FILE_PATTERNS = ("test_*.py", "*_test.py", "conftest.py")
SKIPPED_DIRS = frozenset(
    {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules"}
)
TOOL_ARGS: dict[str, list[str]] = {
    spec["function"]["name"]: spec["function"]["parameters"]["required"] for spec in prompts.TOOL_SPECS
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


def parse_arguments(name: str, raw: object) -> dict[str, str]:
    """The arguments of a call to a known tool, checked against its argument list."""
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        raise ToolCallError(prompts.bad_arguments(name, "not valid JSON", signature(name))) from None
    if not isinstance(args, dict):
        raise ToolCallError(prompts.bad_arguments(name, "not a JSON object", signature(name)))
    for key in TOOL_ARGS[name]:
        if not isinstance(args.get(key), str):
            raise ToolCallError(prompts.bad_arguments(name, f"{key!r} is missing or not a string", signature(name)))
    return {key: args[key] for key in TOOL_ARGS[name]}


def is_test_file(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in TEST_FILE_PATTERNS)


def repo_files(root: Path) -> Iterator[Path]:
    """Every file of the repository, caches and .git left out, in a stable order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                yield Path(folder) / name


class Workspace:
    """The repository the agent works in, and the tools that touch it."""

    def __init__(self, root: Path, command_timeout: float) -> None:
        self.root = Path(os.path.realpath(root))
        self.command_timeout = command_timeout
        self.protected = frozenset(self.relative(p) for p in repo_files(self.root) if is_test_file(p.name))

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
        return real

    def read_file(self, path: str) -> ToolResult:
        real = self.resolve(path)
        if not real.is_file():
            return _failed(f"Error: {path} is not a file (to list a folder, call run with: ls {path})")
        text = real.read_text(encoding="utf-8", errors="replace")
        if len(text) <= FILE_LIMIT:
            return ToolResult(text)
        shown = text[:FILE_LIMIT]
        if "\n" in shown:  # end on a whole line, so the note's line number is where reading goes on
            shown = shown[: shown.rindex("\n") + 1]
        note = prompts.file_truncated(path, len(shown), len(text), shown.count("\n") + 1)
        return ToolResult(shown + note, truncated=True)

    def write_file(self, path: str, content: str) -> ToolResult:
        real = self.writable(path)
        if real.is_dir():
            return _failed(f"Error: {path} is a folder")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(content, encoding="utf-8")
        return ToolResult(f"Wrote {len(content)} characters to {path}.")

    def edit_file(self, path: str, old: str, new: str) -> ToolResult:
        real = self.writable(path)
        if not real.is_file():
            return _failed(f"Error: {path} is not a file; create it with write_file")
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
        output, exit_code = run_command(command, self.root, self.command_timeout)
        shown, truncated = truncate_middle(output, OUTPUT_LIMIT)
        if shown and not shown.endswith("\n"):
            shown += "\n"
        if exit_code is None:
            note = prompts.command_timed_out(self.command_timeout)
            return ToolResult(shown + note, ok=False, truncated=truncated, error="timeout")
        return ToolResult(f"{shown}[exit code {exit_code}]", ok=exit_code == 0, truncated=truncated)

    def call(self, name: str, args: dict[str, str]) -> ToolResult:
        """Carry out a checked call; a path the rules refuse becomes a refused result, not an exception."""
        try:
            if name == "read_file":
                return self.read_file(args["path"])
            if name == "write_file":
                return self.write_file(args["path"], args["content"])
            if name == "edit_file":
                return self.edit_file(args["path"], args["old"], args["new"])
            return self.run(args["command"])
        except ToolCallError as e:
            return ToolResult(str(e), ok=False, refused=True, error=str(e))
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in a path
            return _failed(f"Error: {getattr(e, 'strerror', None) or e} ({args.get('path', '')})")


def _failed(text: str) -> ToolResult:
    return ToolResult(text, ok=False, error=text)


def truncate_middle(text: str, limit: int) -> tuple[str, bool]:
    """Keep the start and the end of `text` (where errors and summaries are), with a note in between."""
    if len(text) <= limit:
        return text, False
    half = limit // 2
    return text[:half] + prompts.output_cut(len(text) - 2 * half) + text[-half:], True


def run_command(command: str, cwd: Path, timeout: float) -> tuple[str, int | None]:
    """Output (stdout and stderr together) and exit code of `bash -c command`; exit code None on timeout."""
    shell = shutil.which("bash") or "/bin/sh"
    # A new session, so that a timeout (or Ctrl-C here) can kill the command and everything it started.
    proc = subprocess.Popen(
        [shell, "-c", command],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out.decode("utf-8", errors="replace"), proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return _leftover_output(proc), None
    except BaseException:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(proc.pid, signal.SIGKILL)


def _leftover_output(proc: subprocess.Popen[bytes]) -> str:
    try:
        out, _ = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # something outside the group still holds the pipe open
        proc.kill()
        return ""
    return out.decode("utf-8", errors="replace")


def summarize_args(args: dict[str, Any]) -> dict[str, Any]:
    """Arguments for the trace: file text replaced by its length, as clearing does."""
    return {k: len(v) if k in ("content", "old", "new") and isinstance(v, str) else v for k, v in args.items()}
