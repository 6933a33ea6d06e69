"""The tools: confinement to the repository, read-only tests, truncation, timeouts, and argument checks."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent import tools
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


def test_a_long_file_is_cut_with_a_note_that_leads_to_the_rest(ws: Workspace) -> None:
    lines = [f"line {i:05d} " + "x" * 40 for i in range(1, 601)]
    (ws.root / "big.txt").write_text("\n".join(lines) + "\n")
    result = ws.call("read_file", {"path": "big.txt"})
    shown, note = result.text.split("\n[truncated:", 1)
    assert result.truncated and len(shown) <= tools.FILE_LIMIT
    assert f"of {len(chr(10).join(lines)) + 1} characters" in note
    command = note.split("call run with: ", 1)[1].rstrip("]")
    next_output = ws.call("run", {"command": command}).text
    assert next_output.splitlines()[0] == lines[len(shown.splitlines())]  # reading on starts where the cut was


def test_long_command_output_keeps_head_and_tail_with_a_note(ws: Workspace) -> None:
    result = ws.call("run", {"command": "for i in $(seq 1 3000); do echo line-$i; done"})
    assert result.truncated and result.ok
    assert result.text.startswith("line-1\n") and "line-3000\n[exit code 0]" in result.text
    assert "characters of output cut here" in result.text
    assert len(result.text) < tools.OUTPUT_LIMIT + 200


def test_run_reports_the_exit_code_and_merges_stderr(ws: Workspace) -> None:
    result = ws.call("run", {"command": "echo out; echo err >&2; exit 3"})
    assert not result.ok and not result.truncated
    assert result.text == "out\nerr\n[exit code 3]"


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
    [("{not json", "not valid JSON"), ("[1, 2]", "not a JSON object"), ('{"file": "a.py"}', "'path' is missing"),
     ('{"path": 3}', "'path' is missing or not a string"), (None, "not a JSON object")],
)  # fmt: skip
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


def test_commands_run_in_the_repository(ws: Workspace) -> None:
    assert ws.call("run", {"command": "pwd"}).text.startswith(os.path.realpath(ws.root))
