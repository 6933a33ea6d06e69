"""Tests of due dates and the overdue listing."""

from __future__ import annotations

import pytest

import todo


def run_todo(capsys, path, *args: str) -> tuple[int, str]:
    status = todo.main(["--file", str(path), *args])
    return status, capsys.readouterr().out


def test_add_with_due_date_is_listed(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "pay rent", "--due", "2024-05-01")
    run_todo(capsys, path, "add", "buy milk")

    status, out = run_todo(capsys, path, "list")

    assert status == 0
    assert out.splitlines() == ["  1 [ ] pay rent (due 2024-05-01)", "  2 [ ] buy milk"]


@pytest.mark.parametrize("bad", ["2024-13-01", "2023-02-29", "2024-5-1", "tomorrow"])
def test_bad_due_date_is_refused_and_nothing_saved(tmp_path, capsys, bad):
    path = tmp_path / "todo.json"

    status = todo.main(["--file", str(path), "add", "pay rent", "--due", bad])

    assert status == 1
    assert "invalid date" in capsys.readouterr().err
    assert not path.exists()


def test_overdue_is_sorted_and_skips_done_undated_and_today(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "later", "--due", "2024-05-09")
    run_todo(capsys, path, "add", "undated")
    run_todo(capsys, path, "add", "earliest", "--due", "2024-03-02")
    run_todo(capsys, path, "add", "finished", "--due", "2024-01-01")
    run_todo(capsys, path, "add", "due today", "--due", "2024-05-10")
    run_todo(capsys, path, "done", "4")

    status, out = run_todo(capsys, path, "overdue", "--today", "2024-05-10")

    assert status == 0
    assert out.splitlines() == ["  3 [ ] earliest (due 2024-03-02)", "  1 [ ] later (due 2024-05-09)"]


def test_overdue_with_nothing_late(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "next year", "--due", "2030-01-01")

    assert run_todo(capsys, path, "overdue", "--today", "2024-05-10")[1].strip() == "nothing overdue"


def test_due_date_survives_done_and_edit(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "pay rent", "--due", "2024-05-01")
    run_todo(capsys, path, "edit", "1", "pay the rent")
    run_todo(capsys, path, "done", "1")

    assert run_todo(capsys, path, "list", "--all")[1].splitlines() == ["  1 [x] pay the rent (due 2024-05-01)"]
