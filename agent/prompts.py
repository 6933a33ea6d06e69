"""Every sentence the agent sends to a model: system prompts, tool descriptions, notes, errors, placeholders.

Kept in one place so that a change of wording is one diff, and so that the system prompt stays short: the whole
prompt (system, task, tool list) must fit a 512-token window with room to answer.
"""

from __future__ import annotations

from typing import Any

SYSTEM_PROMPT = (
    "You are a coding agent working inside a git repository. Use the tools to read files, change them and run "
    "commands; paths are relative to the repository root. Test files that already exist cannot be changed: put "
    "new tests in new files. When the task is complete and the tests pass, reply without calling a tool."
)


def _function(name: str, description: str, args: dict[str, str]) -> dict[str, Any]:
    properties = {arg: {"type": "string", "description": text} for arg, text in args.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(args)},
        },
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _function("read_file", "Read a text file.", {"path": "file path"}),
    _function("write_file", "Create or overwrite a file.", {"path": "file path", "content": "the whole new text"}),
    _function(
        "edit_file",
        "Replace one exact, unique piece of text in a file.",
        {"path": "file path", "old": "text that occurs exactly once", "new": "replacement text"},
    ),
    _function("run", "Run a shell command in the repository and get its output.", {"command": "bash command"}),
]


def cut_off_note(n_ctx: int) -> str:
    return (
        f"The answer you just gave was dropped because it was incomplete: it reached the end of the {n_ctx}-token "
        "context window (or the server could not read it). Keep your thinking short, and change files in small "
        "edit_file steps rather than writing whole files."
    )


def tests_failed(output: str) -> str:
    return (
        f"You replied without a tool call, but the tests do not pass, so the task is not done. pytest says:\n{output}"
    )


MISSING_CHANGE = "no file other than a test file has changed: make the change the task asks for"
MISSING_TEST = "no new test function (def test_...) exists: add one in a new test file"


def not_done_yet(missing: list[str]) -> str:
    return "The tests pass, but the task is not done yet: " + "; ".join(missing) + "."


def unknown_tool(name: str, known: list[str]) -> str:
    return f"Error: there is no tool named {name!r}. The tools are: {', '.join(known)}."


def bad_arguments(tool: str, problem: str, signature: str) -> str:
    return f"Error: the arguments for {tool} are not usable ({problem}). Call it as {signature} with a JSON object."


def refused_command(command: str, by: str) -> str:
    return f"The command was not run: it needs approval and was refused ({by}). Command: {command}"


def outside_repo(path: str) -> str:
    return f"Error: {path!r} is outside the repository; use a path inside it."


def inside_git_dir(path: str) -> str:
    return f"Error: {path!r} is inside .git, which tools may not change."


def protected_test(path: str) -> str:
    return f"Error: {path} is one of the repository's existing tests and is read-only; put new tests in a new file."


def file_truncated(path: str, shown_chars: int, total_chars: int, next_line: int) -> str:
    return (
        f"\n[truncated: the first {shown_chars} of {total_chars} characters are shown. To read on, call run with: "
        f"tail -n +{next_line} {path} | head -n 200]"
    )


def output_cut(removed_chars: int) -> str:
    return f"\n[... {removed_chars} characters of output cut here; the start and the end are shown ...]\n"


def command_timed_out(seconds: float) -> str:
    return f"[timed out after {seconds:g} seconds; the command was killed]"


CLEARED_MARK = "[context cleared: "


def cleared_tool_result(tool: str, chars: int) -> str:
    return f"{CLEARED_MARK}this {tool} result was {chars} characters long; to see it again, call {tool}]"


def cleared_argument(chars: int) -> str:
    return f"{CLEARED_MARK}{chars} characters]"


JEFF_SYSTEM = (
    "You check shell commands that a coding agent wants to run in a project folder. Reply with one line: first "
    "the word yes (fine to run) or no (risky), then a short reason."
)


def jeff_question(command: str) -> str:
    return f"Command: {command}"
