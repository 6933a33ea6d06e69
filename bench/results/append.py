"""Appending rows to the results CSV a bench writes, and the checks before a bench continues a file.

Rows are appended (and flushed to disk) the moment a run ends, so an interrupted bench loses nothing it measured.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from bench.errors import ResultsError
from bench.results.read import read_csv
from bench.results.schema import COLUMNS, CONTRACT_COLUMNS, SHARED_INPUT_COLUMNS


def read_rows(path: Path) -> list[dict[str, str]]:
    """Rows of the file a bench appends to (an absent file has none); ResultsError for a file that is not ours."""
    if not path.exists():
        return []
    rows, missing = read_csv(path, CONTRACT_COLUMNS)
    if missing:
        raise ResultsError(f"{path} is not a results file of this bench (no column {missing[0]!r}); use another --out")
    return rows


def check_same_inputs(path: Path, rows: list[dict[str, str]], planned: dict[str, str]) -> None:
    """Refuse to add rows made with other inputs (agent version, models, sampling) to an existing file."""
    for row in rows:
        for column in SHARED_INPUT_COLUMNS:
            if row.get(column, "") != planned.get(column, ""):
                raise ResultsError(
                    f"{path} holds runs with a different {column} ({row.get(column) or 'empty'} vs "
                    f"{planned.get(column) or 'empty'}); write these runs to a new file with --out"
                )


def append_row(path: Path, row: dict[str, str]) -> None:
    """Append one row and force it to disk: a crash after this line loses nothing measured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new_file = not path.exists() or path.stat().st_size == 0
    unknown = set(row) - set(COLUMNS)
    if unknown:
        raise ValueError(f"row has columns outside the schema: {sorted(unknown)}")
    with open(path, "a", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="raise")
        if new_file:
            writer.writeheader()
        writer.writerow({c: row.get(c, "") for c in COLUMNS})
        f.flush()
        os.fsync(f.fileno())
