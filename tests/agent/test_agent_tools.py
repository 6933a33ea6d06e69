"""The tools: confinement to the repository, read-only tests, truncation, timeouts, and argument checks."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from pathlib import Path

import pytest

from agent import file_pages, prompts, tools
from agent.tools import ToolCallError, Workspace, parse_arguments


@pytest.fixture
def ws(repo: Path) -> Workspace:
    return Workspace(repo, command_timeout=10)


@pytest.mark.parametrize("path", ["../outside.txt", "sub/../../outside.txt", "/etc/hostname", "/tmp"])
def test_paths_outside_the_repository_are_refused(ws: Workspace, path: str) -> None:
    for result in (ws.call("read_file", {"path": path}), ws.call("write_file", {"path": path, "content": "x"})):
        assert result.refused and not result.ok
        assert "outside the repository" in result.text
    assert not (ws.root.parent / "outside.txt").exists()


def test_paths_inside_are_accepted_relative_absolute_or_with_inner_dotdot(ws: Workspace) -> None:
    for path in ("calc.py", str(ws.root / "calc.py"), "sub/../calc.py", "./calc.py"):
        assert ws.call("read_file", {"path": path}).text == "def add(a, b):\n    return a + b\n"


def test_a_symlink_that_leads_out_is_refused_for_reading_and_writing(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    (ws.root / "link.txt").symlink_to(secret)
    (ws.root / "linkdir").symlink_to(tmp_path)
    assert ws.call("read_file", {"path": "link.txt"}).refused
    assert ws.call("write_file", {"path": "linkdir/new.txt", "content": "x"}).refused
    assert secret.read_text() == "password" and not (tmp_path / "new.txt").exists()


def test_writing_into_git_is_refused_but_reading_it_is_not(ws: Workspace) -> None:
    (ws.root / ".git").mkdir()
    (ws.root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    result = ws.call("write_file", {"path": ".git/hooks/pre-commit", "content": "rm -rf /"})
    assert result.refused and ".git" in result.text
    assert not (ws.root / ".git" / "hooks").exists()
    assert ws.call("read_file", {"path": ".git/HEAD"}).ok


def test_tests_that_exist_at_start_are_read_only_and_new_tests_are_not(repo: Path) -> None:
    (repo / "pkg").mkdir()
    (repo / "pkg" / "conftest.py").write_text("")
    (repo / "pkg" / "calc_test.py").write_text("def test_x():\n    pass\n")
    ws = Workspace(repo, command_timeout=10)
    for path in ("test_calc.py", "pkg/conftest.py", "pkg/calc_test.py", str(repo / "test_calc.py")):
        assert ws.call("write_file", {"path": path, "content": ""}).refused
        assert ws.call("edit_file", {"path": path, "old": "def", "new": "xx"}).refused
    assert (repo / "test_calc.py").read_text().startswith("from calc import add")
    assert ws.call("write_file", {"path": "test_sub.py", "content": "def test_sub():\n    pass\n"}).ok
    assert ws.call("edit_file", {"path": "test_sub.py", "old": "pass", "new": "pass  # edited"}).ok


def test_write_file_creates_folders_and_reports_the_size(ws: Workspace) -> None:
    result = ws.call("write_file", {"path": "src/new/mod.py", "content": "x = 1\n"})
    assert result.ok and "6 characters" in result.text
    assert (ws.root / "src" / "new" / "mod.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(("old", "count"), [("return a - b", 0), ("a", 2)])
def test_edit_file_needs_text_that_occurs_exactly_once(ws: Workspace, old: str, count: int) -> None:
    (ws.root / "two.py").write_text("a = 1\na = 2\n")
    path = "calc.py" if count == 0 else "two.py"
    result = ws.call("edit_file", {"path": path, "old": old, "new": "z"})
    assert not result.ok and f"occurs {count} times" in result.text


def test_edit_file_replaces_the_unique_text(ws: Workspace) -> None:
    result = ws.call("edit_file", {"path": "calc.py", "old": "a + b", "new": "a + b + 0"})
    assert result.ok
    assert (ws.root / "calc.py").read_text() == "def add(a, b):\n    return a + b + 0\n"


def read_by_following_the_hints(ws: Workspace, path: str) -> tuple[str, int]:
    """Read a file as a model would: call read_file, then the call each note names, until the end.
    Returns the text put back together and the number of calls."""
    args: dict = {"path": path}
    parts = []
    for calls in range(1, 100):
        result = ws.call("read_file", parse_arguments("read_file", json.dumps(args)))
        assert result.ok and len(result.text) <= tools.FILE_LIMIT + 300
        text, _, note = result.text.partition("\n[Shown: ")
        parts.append(text)
        if "To read on, call read_file with " not in note:
            assert "that is the end of the file" in note or not note
            return "".join(parts), calls
        args = json.loads(note.split("call read_file with ", 1)[1].removesuffix("]"))
    raise AssertionError("the hints never reached the end of the file")


def test_a_file_whose_first_line_is_50000_characters_can_be_read_to_the_end(ws: Workspace) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(50_000)) + "\nsecond line\n"
    (ws.root / "long.txt").write_text(text)
    first = ws.call("read_file", {"path": "long.txt"})
    assert first.truncated and '"char_offset": 12000' in first.text  # not a call that shows the same line again
    assembled, calls = read_by_following_the_hints(ws, "long.txt")
    assert assembled == text and calls == 5


def test_a_long_file_of_short_lines_is_read_on_by_line(ws: Workspace) -> None:
    lines = [f"line {i:05d} " + "x" * 40 for i in range(1, 601)]
    text = "\n".join(lines) + "\n"
    (ws.root / "big.txt").write_text(text)
    result = ws.call("read_file", {"path": "big.txt"})
    shown = result.text.split("\n[Shown:", 1)[0]
    assert result.truncated and shown.endswith("\n") and len(shown) <= tools.FILE_LIMIT
    next_line = len(shown.splitlines()) + 1
    assert f'{{"path": "big.txt", "offset": {next_line}}}' in result.text
    assert read_by_following_the_hints(ws, "big.txt")[0] == text


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"offset": 3, "limit": 2}, "c\nd\n"),
        ({"offset": 5}, "e\n"),
        ({"char_offset": 4, "char_limit": 3}, "c\n"),  # ends on a whole line where one fits
        ({"char_offset": 6, "char_limit": 1}, "d"),
        ({"char_offset": 1, "limit": 1}, "\n"),
        ({"offset": 99}, ""),
    ],
)
def test_read_file_from_a_line_or_a_character(ws: Workspace, where: dict, expected: str) -> None:
    (ws.root / "abc.txt").write_text("a\nb\nc\nd\ne\n")
    result = ws.call("read_file", parse_arguments("read_file", json.dumps({"path": "abc.txt", **where})))
    assert result.ok and result.text.split("\n[Shown:")[0] == expected


def test_optional_read_arguments_must_be_whole_numbers() -> None:
    assert parse_arguments("read_file", '{"path": "a", "offset": "7", "limit": 3.0}') == {
        "path": "a",
        "offset": 7,
        "limit": 3,
    }
    with pytest.raises(ToolCallError, match="'offset' is not a whole number"):
        parse_arguments("read_file", '{"path": "a", "offset": -2}')


def test_the_tool_list_keeps_path_as_the_only_required_argument_of_read_file() -> None:
    [spec] = [s["function"] for s in prompts.TOOL_SPECS if s["function"]["name"] == "read_file"]
    assert spec["parameters"]["required"] == ["path"]
    assert set(spec["parameters"]["properties"]) == {"path", "offset", "limit", "char_offset", "char_limit"}


def test_write_and_edit_refuse_a_hard_link_to_a_protected_test_or_any_hard_linked_file(ws: Workspace) -> None:
    os.link(ws.root / "test_calc.py", ws.root / "h.py")
    os.link(ws.root / "calc.py", ws.root / "other.py")
    for path in ("h.py", "other.py", "calc.py"):
        assert ws.call("write_file", {"path": path, "content": "x"}).refused
        assert ws.call("edit_file", {"path": path, "old": "def", "new": "xx"}).refused
    assert "hard links" in ws.call("write_file", {"path": "h.py", "content": "x"}).text
    assert (ws.root / "test_calc.py").read_text().startswith("from calc import add")
    assert (ws.root / "calc.py").read_text().startswith("def add")


@pytest.mark.usefixtures("child_processes")
def test_long_command_output_keeps_head_and_tail_with_a_note(ws: Workspace) -> None:
    result = ws.call("run", {"command": "for i in $(seq 1 3000); do echo line-$i; done"})
    assert result.truncated and result.ok
    assert result.text.startswith("line-1\n") and "line-3000\n[exit code 0]" in result.text
    assert "characters of output cut here" in result.text
    assert len(result.text) < tools.OUTPUT_LIMIT + 200


@pytest.mark.usefixtures("child_processes")
def test_run_reports_the_exit_code_and_merges_stderr(ws: Workspace) -> None:
    result = ws.call("run", {"command": "echo out; echo err >&2; exit 3"})
    assert not result.ok and not result.truncated
    assert result.text == "out\nerr\n[exit code 3]"


@pytest.mark.usefixtures("child_processes")
def test_a_command_past_its_timeout_is_killed_with_its_children(repo: Path) -> None:
    ws = Workspace(repo, command_timeout=0.5)
    started = time.monotonic()
    result = ws.call("run", {"command": "sleep 60 & echo $! > child.pid; echo started; wait"})
    assert time.monotonic() - started < 30
    assert not result.ok and result.error == "timeout"
    assert "started" in result.text and "timed out after 0.5 seconds" in result.text
    child = int((repo / "child.pid").read_text())
    assert not _alive(child)


def _alive(pid: int) -> bool:
    for _ in range(50):  # the kill is asynchronous; give it a moment
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return False
        if "State:\tZ" in state:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"file": "a.py"}', "'path' is missing"),
        ('{"path": 3}', "'path' is missing or not a string"),
        (None, "not a JSON object"),
    ],
)
def test_unusable_arguments_are_explained_with_the_signature(raw: object, problem: str) -> None:
    with pytest.raises(ToolCallError) as caught:
        parse_arguments("read_file", raw)
    assert problem in str(caught.value) and "read_file{path}" in str(caught.value)


def test_arguments_keep_only_the_declared_names() -> None:
    assert parse_arguments("edit_file", '{"path": "a", "old": "x", "new": "y", "extra": 1}') == {
        "path": "a",
        "old": "x",
        "new": "y",
    }


def test_missing_files_and_folders_are_errors_not_crashes(ws: Workspace) -> None:
    assert "not a file" in ws.call("read_file", {"path": "nope.py"}).text
    assert "not a file" in ws.call("read_file", {"path": "."}).text
    assert "not a file" in ws.call("edit_file", {"path": "nope.py", "old": "a", "new": "b"}).text
    assert not ws.call("read_file", {"path": "bad\0name"}).ok


@pytest.mark.usefixtures("child_processes")
def test_commands_run_in_the_repository(ws: Workspace) -> None:
    assert ws.call("run", {"command": "pwd"}).text.startswith(os.path.realpath(ws.root))


def test_read_file_keeps_only_the_page_in_memory(tmp_path: Path) -> None:
    """A 64 MiB file: the page and its note, not the file (read whole, its text alone took 64 MiB and more)."""
    (tmp_path / "big.txt").write_bytes(b"0123456789abcdef\n" * (4 << 20))
    workspace = Workspace(tmp_path, 30)
    tracemalloc.start()
    try:
        first = workspace.call("read_file", {"path": "big.txt"})
        last = workspace.call("read_file", {"path": "big.txt", "offset": 4 << 20})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert first.truncated and first.text.startswith("0123456789abcdef\n") and "71303168 characters" in first.text
    assert last.text.startswith("0123456789abcdef\n\n[Shown: lines 4194304-4194304")
    assert peak < 16 << 20, peak


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_a_page_read_in_pieces_is_the_page_of_the_whole_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(file_pages, "CHUNK_CHARS", chunk)
    raw = "line one\r\nzwei é\rdrei 日本\n\n" + "x" * 30 + "\nend"
    (tmp_path / "f.txt").write_bytes(raw.encode() + b"\xff")
    text = (tmp_path / "f.txt").read_text(encoding="utf-8", errors="replace")
    monkeypatch.setattr(file_pages, "FILE_LIMIT", 16)
    asks = [{}, {"offset": 2}, {"offset": 4, "limit": 1}, {"offset": 9}, {"char_offset": 13}, {"char_offset": 99}]
    asks += [{"char_offset": 5, "char_limit": 4}, {"limit": 2}, {"offset": 5, "limit": 3, "char_limit": 3}]
    for ask in asks:
        from_file = file_pages.read_page("f.txt", tmp_path / "f.txt", **ask)
        assert from_file == file_pages.show_part("f.txt", text, **ask), ask
