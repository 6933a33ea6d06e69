"""Every sentence the agent sends to a model: system prompts, tool descriptions, notes, errors, placeholders.

Kept in one place so that a change of wording is one diff, and so that the system prompt stays short: the whole
prompt (system, task, tool list) must fit a 512-token window with room to answer.
"""

from __future__ import annotations

import json
from typing import Any

SYSTEM_PROMPT = (
    "You are a coding agent working inside a git repository. Use the tools to read files, change them and run "
    "commands; paths are relative to the repository root. Test files that already exist cannot be changed: put "
    "new tests in new files. When the task is complete and the tests pass, reply without calling a tool."
)


def _function(
    name: str, description: str, args: dict[str, str], optional: dict[str, str] | None = None
) -> dict[str, Any]:
    """A tool in the OpenAI format: `args` are required strings, `optional` are whole numbers the model may give."""
    properties: dict[str, Any] = {arg: {"type": "string", "description": text} for arg, text in args.items()}
    properties.update({arg: {"type": "integer", "description": text} for arg, text in (optional or {}).items()})
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(args)},
        },
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _function(
        "read_file",
        "Read a text file.",
        {"path": "file path"},
        optional={
            "offset": "first line to show (1-based)",
            "limit": "how many lines",
            "char_offset": "first character to show (0-based), for long lines",
            "char_limit": "how many characters",
        },
    ),
    _function("write_file", "Create or overwrite a file.", {"path": "file path", "content": "the whole new text"}),
    _function(
        "edit_file",
        "Replace one exact, unique piece of text in a file.",
        {"path": "file path", "old": "text that occurs exactly once", "new": "replacement text"},
    ),
    _function("run", "Run a shell command in the repository and get its output.", {"command": "bash command"}),
]

# The article's own words (Part 3), character for character: presets part2, clearing and part3 must send exactly
# these. tests/agent/test_agent_article_texts.py pins them and compares them with the article.
CUT_NOTE = (
    "Your last answer was cut off or could not be read; it may have reached the end of the {size}-token context "
    "before you finished. Think briefly, and change files in small steps with edit_file instead of rewriting them "
    "whole."
)
CLEARED_TOOL_RESULT = "[cleared to save context: {chars} characters. Call the tool again if you need it.]"
CLEARED_ARGUMENT = "[cleared: {chars} characters]"
CLEARED_MARK = "[cleared"  # what the article's clear_old looks for to leave a placeholder alone


def cut_off_note(n_ctx: int) -> str:
    return CUT_NOTE.format(size=n_ctx)


def cleared_tool_result(chars: int) -> str:
    return CLEARED_TOOL_RESULT.format(chars=chars)


def cleared_argument(chars: int) -> str:
    return CLEARED_ARGUMENT.format(chars=chars)


def cleared_test_output(chars: int) -> str:
    """part3+ and strict: the output of an older failed done check (the newest one is kept)."""
    return f"[cleared to save context: {chars} characters of test output from an earlier done check.]"


def tests_failed(output: str) -> str:
    return (
        f"You replied without a tool call, but the tests do not pass, so the task is not done. pytest says:\n{output}"
    )


def own_tests_fail(output: str) -> str:
    return (
        "You replied without a tool call, but the repository's own tests fail when they run without the test files "
        f"you added, so the task is not done. pytest says:\n{output}"
    )


MISSING_CHANGE = "no file other than a test file has changed: make the change the task asks for"
MISSING_TEST = "pytest collects no test from a new test file: add a test function (def test_...) in a new test file"


def not_done_yet(missing: list[str]) -> str:
    return "The tests pass, but the task is not done yet: " + "; ".join(missing) + "."


QUOTED_HEAD = 200  # characters of a name, path or command the model sent that a message quotes back


def head(text: str) -> str:
    """`text` as a message quotes it back: whole up to QUOTED_HEAD characters, else its start and its length."""
    return text if len(text) <= QUOTED_HEAD else f"{text[:QUOTED_HEAD]}... ({len(text)} characters)"


def quoted(text: str) -> str:
    """`text` in quotes (as repr shows it), cut as `head` cuts it."""
    return repr(text) if len(text) <= QUOTED_HEAD else f"{text[:QUOTED_HEAD]!r}... ({len(text)} characters)"


def unknown_tool(name: str, known: list[str]) -> str:
    return f"Error: there is no tool named {quoted(name)}. The tools are: {', '.join(known)}."


def bad_arguments(tool: str, problem: str, signature: str) -> str:
    return f"Error: the arguments for {tool} are not usable ({problem}). Call it as {signature} with a JSON object."


def refused_command(command: str, by: str) -> str:
    return f"The command was not run: it needs approval and was refused ({by}). Command: {head(command)}"


def outside_repo(path: str) -> str:
    return f"Error: {quoted(path)} is outside the repository; use a path inside it."


def inside_git_dir(path: str) -> str:
    return f"Error: {quoted(path)} is inside .git, which tools may not change."


def protected_test(path: str) -> str:
    return (
        f"Error: {head(path)} is one of the repository's existing tests and is read-only; put new tests in a new file."
    )


def read_on(path: str, shown: str, total_chars: int, position: dict[str, int]) -> str:
    """The note under a part of a file: what was shown, and the call that shows what comes next."""
    call = json.dumps({"path": path, **position})
    return f"\n[Shown: {shown} of {total_chars} characters. To read on, call read_file with {call}]"


def read_to_end(shown: str, total_chars: int) -> str:
    return f"\n[Shown: {shown}; that is the end of the file ({total_chars} characters).]"


def hard_linked(path: str) -> str:
    return (
        f"Error: {head(path)} has other hard links (it shares its content with another file); tools do not change it."
    )


def output_cut(removed_chars: int) -> str:
    return f"\n[... {removed_chars} characters of output cut here; the start and the end are shown ...]\n"


def command_timed_out(seconds: float) -> str:
    return f"[timed out after {seconds:g} seconds; the command was killed]"


def protected_restored(changes: list[str]) -> str:
    return (
        f"\n[The repository's existing tests are read-only, and this changed them: {', '.join(changes)}. "
        "They were restored to their original content. Put new tests in new files.]"
    )


NO_TESTS_RAN = "\n(pytest collected no tests, so nothing was shown to pass.)"


CHECK_ENDED_EARLY = (
    "\n(pytest did not finish its session: something in the tests ended it, so nothing was shown to pass.)"
)


def changed_during_check(changes: list[str]) -> str:
    return (
        "You replied without a tool call, but files of the repository changed while the done check ran "
        f"({', '.join(changes)}), so the check proves nothing and the task is not done. Do not change existing "
        "tests, and leave nothing running that writes files."
    )


def links_out_of_repository(links: list[str]) -> str:
    return (
        "You replied without a tool call, but the repository holds links that lead outside it "
        f"({', '.join(links)}); the done check does not follow them, so the task is not done. Remove them."
    )


def planted_distrusted(paths: list[str]) -> str:
    return f"\n(The done check does not load conftest.py files you created: {', '.join(paths)}.)"


JEFF_SYSTEM = (
    "You check shell commands that a coding agent wants to run in a project folder. Reply with one line: first "
    "the word yes (fine to run) or no (risky), then a short reason."
)


def jeff_question(command: str) -> str:
    return f"Command: {command}"


# Summarizing instead of clearing (presets summary, summary-jeff and hybrid; agent/summary.py). Not the article's:
# the article left summaries open. SUMMARY_TOKENS is the most a summary may take (the request's max_tokens).
SUMMARY_TOKENS = 200
SUMMARIZED_TOOL_RESULT = "[cleared into the summary: {chars} characters]"  # starts with CLEARED_MARK: left alone
SUMMARY_SYSTEM = (
    "You summarize the earlier work of a coding agent so that it can go on without the full text. Reply with the "
    "summary only: the facts it found (file names, what they hold, command results, errors) and what it changed."
)


def summarized_tool_result(chars: int) -> str:
    return SUMMARIZED_TOOL_RESULT.format(chars=chars)


def summary_request(limit: int, keep: int) -> str:
    """What Flint is asked, after the conversation as it stands (so that the server reuses its cached prompt)."""
    return (
        f"Before you go on: in at most {limit} tokens, summarize what the tool results before the newest {keep} "
        "showed and what you changed, so that you can continue without them. Reply with the summary only, without "
        "calling a tool."
    )


def summary_material(limit: int, previous: str | None, material: str) -> str:
    """What Jeff is asked: the material itself (Jeff has not seen the conversation)."""
    earlier = f"The summary so far:\n{previous}\n\n" if previous else ""
    return f"{earlier}In at most {limit} tokens, summarize this earlier work of a coding agent:\n{material}"


def summary_message(summary: str) -> str:
    """The message after the task that holds the summary; later summaries replace it."""
    return f"[Summary of earlier work; its tool results were cleared to save context.]\n{summary}"


# The small model first (presets jeff-first and jeff-gate; agent/jeff_first.py). jeff-first needs no words of its
# own: Jeff gets Flint's conversation and tools, and hands over by answering without a tool call.
JEFF_GATE_SYSTEM = (
    "You decide who takes the next step of a coding agent: reply jeff when the step is simple (read a file, run "
    "the tests, a small edit), or flint when it needs the large model. Reply with one word."
)


def jeff_gate_question(task: str, role: str, newest: str, messages: int) -> str:
    return f"Task (start): {task}\nMessages so far: {messages}\nNewest ({role}, end): {newest}"
