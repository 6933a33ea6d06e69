"""`bench compare`: hand-built results files, and every number the command prints."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from bench.analyze.compare import Gate, compare, parse_gate
from bench.cli import main
from bench.errors import ConfigError, ResultsError
from bench.results.schema import COLUMNS


def run_row(run_id: str, **values: str) -> dict[str, str]:
    base = {
        "run_id": run_id,
        "fixture": "todo_repo",
        "preset": "part3",
        "ctx": "8192",
        "flint_model": "flint.gguf",
        "jeff_model": "jeff.gguf",
        "stop_reason": "done",
        "hidden_passed": "6",
        "hidden_total": "6",
    }
    return {**base, **values}


def write_results(path: Path, rows: list[dict[str, str]]) -> str:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in COLUMNS} for row in rows)
    return str(path)


@pytest.fixture
def old_and_new(tmp_path: Path) -> tuple[str, str]:
    part2 = {"preset": "part2"}
    failed = {"stop_reason": "server_error"}
    old = [
        run_row("a1", **part2, **failed, hidden_passed="3", wall_s="30", prompt_tokens_reprocessed="9000"),
        run_row("a2", **part2, **failed, wall_s="40", prompt_tokens_reprocessed="11000"),
        run_row("a3", **part2, wall_s="50.5", prompt_tokens_reprocessed="10000"),
        run_row("b1", wall_s="124", prompt_tokens_reprocessed="14689"),
        run_row("b2", wall_s="231", prompt_tokens_reprocessed="71820"),
        run_row("b3", wall_s="96", prompt_tokens_reprocessed="15832"),
    ]
    limit = {"stop_reason": "step_limit"}
    new = [
        run_row("c1", **part2, wall_s="100", prompt_tokens_reprocessed="9500"),
        run_row("c2", **part2, wall_s="", prompt_tokens_reprocessed="10500"),
        run_row("c3", **part2, **limit, hidden_passed="2", wall_s="110", prompt_tokens_reprocessed=""),
        run_row("d1", wall_s="120", prompt_tokens_reprocessed="15000"),
        run_row("d2", **limit, hidden_passed="0", wall_s="200", prompt_tokens_reprocessed="20000"),
    ]
    return write_results(tmp_path / "old.csv", old), write_results(tmp_path / "new.csv", new)


def table_line(text: str, group: str, name: str) -> str:
    """The line of one metric in one group's table."""
    section = text.split(f"## {group}\n", 1)[1].split("\n## ", 1)[0]
    return next(line for line in section.splitlines() if line.startswith(f"| {name} |"))


def test_groups_side_by_side_with_medians_ranges_and_changes(old_and_new: tuple[str, str]) -> None:
    text, tripped = compare(old_and_new)
    assert not tripped
    assert "# Compare: old.csv → new.csv" in text
    assert "| metric | old.csv | new.csv | new.csv vs old.csv |" in text
    assert table_line(text, "part2", "runs") == "| runs | 3 | 3 |  |"
    assert table_line(text, "part2", "completed") == "| completed | 1 of 3 | 2 of 3 | +33 pp |"
    hidden = table_line(text, "part2", "hidden passed")
    assert hidden == "| hidden passed | 3, 6, 6 | 6, 6, 2 | ±0 (±0.0%, within noise) |"
    stops = table_line(text, "part2", "stop reasons")
    assert stops == "| stop reasons | server_error 2, done 1 | done 2, step_limit 1 |  |"
    # 30, 40, 50.5 -> 40 [30–50.5]; the unmeasured wall time of c2 is left out, not read as 0.
    wall = table_line(text, "part2", "wall_s")
    assert wall == "| wall_s | 40 [30–50.5] | 105 [100–110] | +65 (+162.5%, beyond noise) |"
    tokens = table_line(text, "part3", "prompt_tokens_reprocessed")
    assert tokens == (
        "| prompt_tokens_reprocessed | 15,832 [14,689–71,820] | 17,500 [15,000–20,000] "
        "| +1,668 (+10.5%, within noise) |"
    )
    assert table_line(text, "part3", "completed") == "| completed | 3 of 3 | 1 of 2 | -50 pp |"


def test_columns_equal_everywhere_are_left_out(old_and_new: tuple[str, str]) -> None:
    text, _ = compare(old_and_new)
    assert "Same in every group: fixture todo_repo, ctx 8192, flint_model flint.gguf, jeff_model jeff.gguf." in text
    assert "## part2\n" in text and "## part3\n" in text
    assert "Not measured in any file: peak_gpu_mib_flint, peak_gpu_mib_jeff, peak_gpu_mib_device." in text
    assert "| peak_gpu_mib_flint |" not in text


def test_a_group_missing_from_a_file_shows_a_dash(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", [run_row("a1", ctx="4096", wall_s="10")])
    new = write_results(tmp_path / "new.csv", [run_row("b1", ctx="8192", wall_s="12")])
    text, _ = compare([old, new])
    assert table_line(text, "ctx 4096", "wall_s") == "| wall_s | 10 | — | n/a |"
    assert table_line(text, "ctx 8192", "runs") == "| runs | — | 1 |  |"


def test_single_runs_have_unknown_noise(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", [run_row("a1", wall_s="10", peak_gpu_mib_flint="13644")])
    new = write_results(tmp_path / "new.csv", [run_row("b1", wall_s="12", peak_gpu_mib_flint="13652")])
    text, _ = compare([old, new])
    assert table_line(text, "todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf", "wall_s").endswith(
        "| 10 | 12 | +2 (+20.0%, noise unknown) |"
    )
    assert "| peak_gpu_mib_flint | 13,644 | 13,652 | +8 (+0.1%, noise unknown) |" in text


def test_more_than_two_files_are_each_compared_with_the_first(tmp_path: Path) -> None:
    walls = {"a": "10", "b": "15", "c": "5"}
    files = [write_results(tmp_path / f"{name}.csv", [run_row(name, wall_s=wall)]) for name, wall in walls.items()]
    text, _ = compare(files)
    assert "| metric | a.csv | b.csv | c.csv | b.csv vs a.csv | c.csv vs a.csv |" in text
    assert "| wall_s | 10 | 15 | 5 | +5 (+50.0%, noise unknown) | -5 (-50.0%, noise unknown) |" in text


def test_files_with_the_same_name_are_told_apart_by_their_folders(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    first = write_results(tmp_path / "x" / "results.csv", [run_row("a")])
    second = write_results(tmp_path / "y" / "results.csv", [run_row("b")])
    text, _ = compare([first, second, first])
    assert "| metric | 1:" + first + " | 2:" + second + " | 3:" + first + " |" in text
    text, _ = compare([first, second])
    assert "| metric | x/results.csv | y/results.csv | y/results.csv vs x/results.csv |" in text


@pytest.mark.parametrize(
    ("text", "gate"),
    [
        ("wall_s", Gate("wall_s", 10.0)),
        ("wall_s:20", Gate("wall_s", 20.0)),
        ("completed", Gate("completed", 0.0)),
        ("hidden_passed", Gate("hidden_passed", 0.0)),
        ("peak_gpu_mib_flint:2.5", Gate("peak_gpu_mib_flint", 2.5)),
    ],
)
def test_gate_defaults_and_thresholds(text: str, gate: Gate) -> None:
    assert parse_gate(text) == gate


@pytest.mark.parametrize(
    ("text", "message"), [("speed", "unknown metric 'speed'"), ("wall_s:-5", ">= 0"), ("wall_s:x", ">= 0")]
)
def test_bad_gates_are_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_gate(text)


Capture = pytest.CaptureFixture[str]


def test_a_regression_beyond_noise_and_threshold_fails(old_and_new: tuple[str, str], capsys: Capture) -> None:
    status = main(["compare", *old_and_new, "--fail-on", "wall_s:100", "--fail-on", "prompt_tokens_reprocessed:5"])
    out = capsys.readouterr().out
    assert status == 1
    assert "FAIL  wall_s worse by more than 100% in part2: new.csv vs old.csv: +65 (+162.5%, beyond noise)" in out
    assert "ok    wall_s worse by more than 100% in part3: new.csv vs old.csv: +36 (+29.0%, within noise)" in out
    # +10.5% is past the 5% threshold, but the ranges overlap: noise does not fail a build.
    tokens = "prompt_tokens_reprocessed worse by more than 5% in part3: new.csv vs old.csv"
    assert f"ok    {tokens}: +1,668 (+10.5%, within noise)" in out


def test_completion_gate_trips_on_any_fall_by_default(old_and_new: tuple[str, str], capsys: Capture) -> None:
    assert main(["compare", *old_and_new, "--fail-on", "completed"]) == 1
    out = capsys.readouterr().out
    assert "ok    completed worse by more than 0 pp in part2: new.csv vs old.csv: +33 pp" in out
    assert "FAIL  completed worse by more than 0 pp in part3: new.csv vs old.csv: -50 pp" in out
    assert main(["compare", *old_and_new, "--fail-on", "completed:60"]) == 0


def test_gates_skip_metrics_not_measured(tmp_path: Path, capsys: Capture) -> None:
    old = write_results(tmp_path / "old.csv", [run_row("a", peak_gpu_mib_flint="")])
    new = write_results(tmp_path / "new.csv", [run_row("b", peak_gpu_mib_flint="13000")])
    assert main(["compare", old, new, "--fail-on", "peak_gpu_mib_flint:0"]) == 0
    out = capsys.readouterr().out
    assert "skip  peak_gpu_mib_flint worse by more than 0% in todo_repo · part3 · ctx 8192" in out
    assert "not measured in both files" in out


def test_hidden_passed_gate(tmp_path: Path) -> None:
    old = write_results(tmp_path / "old.csv", [run_row("a", hidden_passed="6"), run_row("b", hidden_passed="6")])
    new = write_results(tmp_path / "new.csv", [run_row("c", hidden_passed="2"), run_row("d", hidden_passed="3")])
    text, tripped = compare([old, new], [Gate("hidden_passed", 0.0)])
    assert tripped
    assert "FAIL  hidden_passed worse by more than 0% in todo_repo · part3 · ctx 8192 · flint.gguf · jeff.gguf" in text
    assert "-3.5 (-58.3%, beyond noise)" in text


def test_a_file_that_is_not_a_results_csv_is_refused(tmp_path: Path, capsys: Capture) -> None:
    bad = tmp_path / "notes.csv"
    bad.write_text("name,value\nx,1\n", encoding="utf-8")
    with pytest.raises(ResultsError, match="not a bench results CSV"):
        compare([str(bad)])
    assert main(["compare", str(bad), str(tmp_path / "missing.csv")]) == 2
    assert "bench: " in capsys.readouterr().err


def test_a_value_that_is_not_a_number_names_the_run(tmp_path: Path) -> None:
    path = write_results(tmp_path / "r.csv", [run_row("run-7", wall_s="fast")])
    with pytest.raises(ResultsError, match="run run-7: wall_s is 'fast', not a number"):
        compare([path])


def test_a_file_without_runs_is_refused(tmp_path: Path) -> None:
    empty = write_results(tmp_path / "empty.csv", [])
    with pytest.raises(ResultsError, match="empty.csv has no runs yet; run the bench first"):
        compare([empty])
