"""Hidden tests: behaviour the due-date change must not break. Both pass on the original todo.py."""

from __future__ import annotations

import json

import todo


def run_todo(capsys, path, *args: str) -> tuple[int, str, str]:
    """Run the command line; an argparse exit counts as its exit status instead of escaping the test."""
    try:
        status = todo.main(["--file", str(path), *args])
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_commands_without_due_dates_work_as_before(tmp_path, capsys):
    path = tmp_path / "list.json"
    for text in ["sweep the porch", "renew passport", "order printer ink"]:
        assert run_todo(capsys, path, "add", text)[0] == 0
    assert run_todo(capsys, path, "done", "2")[0] == 0
    assert run_todo(capsys, path, "remove", "1")[0] == 0
    assert run_todo(capsys, path, "add", "return library books")[0] == 0

    status, out, _ = run_todo(capsys, path, "list", "--all")

    assert status == 0
    # Ids are not reused after a removal, and items without a due date print exactly as before.
    assert out.splitlines() == ["  2 [x] renew passport", "  3 [ ] order printer ink", "  4 [ ] return library books"]
    assert run_todo(capsys, path, "remove", "1")[0] == 1


def test_a_file_from_the_current_version_still_loads(tmp_path, capsys):
    path = tmp_path / "old.json"
    old = {
        "version": 1,
        "next_id": 4,
        "items": [
            {"id": 1, "text": "fix the bike light", "done": False},
            {"id": 3, "text": "send the invoice", "done": True},
        ],
    }
    path.write_text(json.dumps(old))

    status, out, _ = run_todo(capsys, path, "list", "--all")
    assert status == 0
    assert out.splitlines() == ["  1 [ ] fix the bike light", "  3 [x] send the invoice"]

    assert run_todo(capsys, path, "add", "buy stamps")[0] == 0
    assert run_todo(capsys, path, "list")[1].splitlines() == ["  1 [ ] fix the bike light", "  4 [ ] buy stamps"]
