"""Reading results CSVs: rows of strings where the empty string means "not measured", and numbers parsed once.

Every value in a results CSV is a string and the empty string means "not measured": it is never read as 0.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.errors import ResultsError
from bench.results.schema import COLUMNS, GROUP_COLUMNS


def read_csv(path: Path, required: Sequence[str]) -> tuple[list[dict[str, str]], list[str]]:
    """The rows of a results CSV and the `required` columns its header lacks; OSError when it cannot be read.

    The one reader of results files: each caller words its own error, because what the user should do differs.
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        rows = [dict(row) for row in reader]
    return rows, [column for column in required if column not in header]


Row = dict[str, str]


# Without these a file is not a results CSV at all; other missing columns just read as "not measured".
REQUIRED_COLUMNS = ["run_id", *GROUP_COLUMNS, "stop_reason"]


def read_runs(path: str | Path) -> list[Row]:
    """The runs of a results CSV, every known column present (missing ones as "").

    For the read-only commands: they have nothing to say about a file without runs, so that is an error here.
    """
    path = Path(path)
    try:
        rows, missing = read_csv(path, REQUIRED_COLUMNS)
    except OSError as e:
        raise ResultsError(f"cannot read results file {path}: {e.strerror}; check the path") from e
    if missing:
        raise ResultsError(
            f"{path} is not a bench results CSV (no column {', '.join(missing)}); pass a file bench run wrote"
        )
    if not rows:
        raise ResultsError(f"{path} has no runs yet; run the bench first")
    for row in rows:
        for column in COLUMNS:
            row[column] = (row.get(column) or "").strip()
    return rows


def number(value: str, column: str = "value", run_id: str = "?") -> float | None:
    """A measured number, or None when the value is empty (not measured)."""
    if value == "":
        return None
    try:
        parsed = float(value)
    except ValueError:
        raise ResultsError(f"run {run_id}: {column} is {value!r}, not a number; fix or remove that row") from None
    return None if math.isnan(parsed) else parsed


def number_in(row: Row, column: str) -> float | None:
    """The number in one column of a row, or None when it was not measured; errors name the run."""
    return number(row.get(column, ""), column, row.get("run_id", "?"))


def measured(rows: Iterable[Row], column: str) -> list[float]:
    """The measured values of one column, in row order, skipping empty ones."""
    values = (number_in(row, column) for row in rows)
    return [value for value in values if value is not None]


def is_completed(row: Row) -> bool:
    """A run completed when the agent stopped with `done` and every hidden test passed (both counts measured)."""
    passed, total = number_in(row, "hidden_passed"), number_in(row, "hidden_total")
    return row.get("stop_reason") == "done" and passed is not None and total is not None and passed == total


def labels_of(row: Row) -> list[str]:
    return [label for label in row.get("failure_labels", "").split(";") if label.strip()]
