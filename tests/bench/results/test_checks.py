"""Cells checked on read (bench/results/checks.py): each bad cell refuses the file in one line naming the file, the
row and the column, through the commands that read results as well as read_runs; --skip-bad-rows leaves such rows
out and counts them; a file saved with a byte order mark reads."""

from __future__ import annotations

import codecs
import csv
import logging
from pathlib import Path

import pytest

from bench.cli import main
from bench.errors import ResultsError
from bench.results.read import read_runs
from bench.results.schema import COLUMNS


def row(run_id: str, **values: str) -> dict[str, str]:
    base = {
        "run_id": run_id,
        "fixture": "todo_repo",
        "preset": "part3",
        "ctx": "4096",
        "flint_model": "f.gguf",
        "stop_reason": "done",
        "hidden_passed": "6",
        "hidden_total": "6",
        "wall_s": "20.5",
    }
    return {**base, **values}


def write(path: Path, rows: list[dict[str, str]], bom: bool = False) -> Path:
    with path.open("w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


BAD_CELLS = [
    ({"wall_s": "inf"}, "wall_s", "inf is not a measurement"),
    ({"wall_s": "-3.5"}, "wall_s", "-3.5 is negative: wall_s cannot be"),
    ({"prompt_tokens_reprocessed": "-1"}, "prompt_tokens_reprocessed", "-1 is negative"),
    ({"model_s": "1e400"}, "model_s", "inf is not a measurement"),
    ({"steps": "-inf"}, "steps", "'-inf' is not an integer"),
    ({"stop_reason": "banana"}, "stop_reason", "'banana' is no stop reason"),
    ({"hidden_passed": "7"}, "hidden_passed", "7 is more than hidden_total 6"),
    ({"visible_passed": "4", "visible_total": "3"}, "visible_passed", "4 is more than visible_total 3"),
    ({"ctx": "4096.5"}, "ctx", "'4096.5' is not an integer"),
]


@pytest.mark.parametrize(("values", "column", "problem"), BAD_CELLS, ids=[c for _, c, _ in BAD_CELLS])
def test_a_bad_cell_is_one_line_naming_the_file_the_row_and_the_column(
    tmp_path: Path, values: dict[str, str], column: str, problem: str
) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b", **values)])
    with pytest.raises(ResultsError) as caught:
        read_runs(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: row 3 (run b), column {column}: {problem}")
    assert message.endswith("fix or remove that row, or pass --skip-bad-rows to leave such rows out")


def test_a_run_id_twice_is_refused_rather_than_counted_twice(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b"), row("a")])
    with pytest.raises(ResultsError, match=r"row 4 \(run a\), column run_id: 'a' is on an earlier row too"):
        read_runs(path)


def test_differences_of_measures_may_be_negative_as_their_docs_say(tmp_path: Path) -> None:
    (read,) = read_runs(write(tmp_path / "r.csv", [row("a", harness_s="-0.2", own_s="-0.1")]))
    assert (read.harness_s, read.own_s) == (-0.2, -0.1)


def test_skipping_bad_rows_counts_them(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b", wall_s="inf"), row("c", stop_reason="banana"), row("d")])
    with caplog.at_level(logging.WARNING):
        rows = read_runs(path, skip_bad_rows=True)
    assert [r.run_id for r in rows] == ["a", "d"]
    assert "2 bad row(s) left out (--skip-bad-rows), the first:" in caplog.text and "row 3 (run b)" in caplog.text


def test_a_file_saved_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b")], bom=True)
    assert path.read_bytes().startswith(codecs.BOM_UTF8)
    assert [r.run_id for r in read_runs(path)] == ["a", "b"]


@pytest.mark.parametrize("command", ["compare", "report", "view", "history"])
def test_the_commands_refuse_a_bad_cell_in_one_line_and_skip_it_when_asked(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b", wall_s="inf")])
    out = ["--out-dir", str(tmp_path / "out")] if command in ("report", "history") else []
    out = ["--out", str(tmp_path / "v.html")] if command == "view" else out
    assert main([command, str(path), *out]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "row 3 (run b), column wall_s: inf is not a measurement" in err
    assert "Traceback" not in err
    assert main([command, str(path), *out, "--skip-bad-rows"]) == 0


def test_predictions_score_refuses_a_bad_cell_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "r.csv", [row("a"), row("b", hidden_passed="9")])
    predictions = tmp_path / "p.yaml"
    predictions.write_text("- says: s\n  where: {ctx: 4096}\n  all: {completed: true}\n")
    assert main(["predictions", "score", str(predictions), str(path)]) == 2
    assert "row 3 (run b), column hidden_passed: 9 is more than hidden_total 6" in capsys.readouterr().err
