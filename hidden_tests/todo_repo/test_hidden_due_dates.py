"""Hidden tests of the requested feature: due dates on `add` and `list`, and the `overdue` command."""

from __future__ import annotations

import todo


def run_todo(capsys, path, *args: str) -> tuple[int, str, str]:
    """Run the command line; an argparse exit counts as its exit status instead of escaping the test."""
    try:
        status = todo.main(["--file", str(path), *args])
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_list_shows_due_dates(tmp_path, capsys):
    path = tmp_path / "todo.json"
    assert run_todo(capsys, path, "add", "pay rent", "--due", "2024-05-01")[0] == 0
    assert run_todo(capsys, path, "add", "buy milk")[0] == 0
    assert run_todo(capsys, path, "add", "file taxes", "--due", "2024-04-15")[0] == 0
    assert run_todo(capsys, path, "done", "3")[0] == 0

    assert run_todo(capsys, path, "list")[1].splitlines() == ["  1 [ ] pay rent (due 2024-05-01)", "  2 [ ] buy milk"]
    assert run_todo(capsys, path, "list", "--all")[1].splitlines() == [
        "  1 [ ] pay rent (due 2024-05-01)",
        "  2 [ ] buy milk",
        "  3 [x] file taxes (due 2024-04-15)",
    ]


def test_due_dates_are_validated(tmp_path, capsys):
    path = tmp_path / "todo.json"
    for bad in ["2024-13-01", "2023-02-29", "next friday"]:
        status, out, _ = run_todo(capsys, path, "add", "bad date", "--due", bad)
        assert status != 0, f"--due {bad} was accepted"
    assert run_todo(capsys, path, "list")[1].strip() == "nothing to do"

    assert run_todo(capsys, path, "add", "leap day party", "--due", "2024-02-29")[0] == 0
    assert run_todo(capsys, path, "list")[1].splitlines() == ["  1 [ ] leap day party (due 2024-02-29)"]


def test_overdue_lists_open_items_due_before_today_earliest_first(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "renew insurance", "--due", "2024-05-09")
    run_todo(capsys, path, "add", "no deadline")
    run_todo(capsys, path, "add", "call the bank", "--due", "2024-03-02")
    run_todo(capsys, path, "add", "already handled", "--due", "2024-01-05")
    run_todo(capsys, path, "add", "due today", "--due", "2024-05-10")
    run_todo(capsys, path, "add", "next month", "--due", "2024-06-01")
    run_todo(capsys, path, "add", "same day as the bank", "--due", "2024-03-02")
    run_todo(capsys, path, "done", "4")

    status, out, _ = run_todo(capsys, path, "overdue", "--today", "2024-05-10")

    assert status == 0
    assert out.splitlines() == [
        "  3 [ ] call the bank (due 2024-03-02)",
        "  7 [ ] same day as the bank (due 2024-03-02)",
        "  1 [ ] renew insurance (due 2024-05-09)",
    ]


def test_overdue_says_so_when_nothing_is_overdue(tmp_path, capsys):
    path = tmp_path / "todo.json"
    run_todo(capsys, path, "add", "due today", "--due", "2024-05-10")
    run_todo(capsys, path, "add", "done late", "--due", "2024-01-01")
    run_todo(capsys, path, "add", "no deadline")
    run_todo(capsys, path, "done", "2")

    status, out, _ = run_todo(capsys, path, "overdue", "--today", "2024-05-10")

    assert status == 0
    assert out.strip() == "nothing overdue"
    # The listing reads the list; it must not change it.
    assert len(run_todo(capsys, path, "list", "--all")[1].splitlines()) == 3
