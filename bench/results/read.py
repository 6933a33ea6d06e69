"""Reading results CSVs: the file's cells, and typed rows (bench.results.row.ResultRow) for the commands that read.

Every value in a results CSV is a string and the empty string means "not measured": it is never read as 0.
Cells become typed values once, in ResultRow.from_cells; the writer's side (bench.results.append) keeps the cells.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.errors import ResultsError
from bench.results.checks import BadCell, bad_cell
from bench.results.column import CellError
from bench.results.row import ResultRow
from bench.results.schema import ADDED_COLUMN_VALUES, CONTRACT_COLUMNS, GROUP_COLUMNS

Row = dict[str, str]  # a row's cells, as the file holds them
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CsvContent:
    """A results file as read: its header, its complete rows, and a last row cut short by a crash, if any."""

    header: list[str]  # empty when not even the header was written whole
    rows: list[Row]
    complete_size: int  # bytes up to the end of the last complete row (or of the header)
    partial: bytes  # the bytes of the last row cut short; b"" when there is none


def load_csv(path: Path) -> CsvContent:
    """Read a results file; OSError when it cannot be read, ResultsError when a row before the last is damaged."""
    return parse_csv(path.read_bytes(), str(path))


def parse_csv(data: bytes, name: str = "results file") -> CsvContent:
    """Split a results file into its header, its complete rows, and a last row cut short.

    A row is complete when it ends with a line break, closes its quotes and has as many fields as the header.
    Rows are written whole (bench.results.append), so only the last one can be cut short, by a crash mid-write;
    a damaged row before the last is an error that names its line.
    """
    # A file saved from a spreadsheet starts with a byte order mark: not part of the first column's name.
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    # surrogateescape: a cut can split a multi-byte character; its bytes must survive unchanged into .partial.
    text = data[bom:].decode("utf-8", errors="surrogateescape")
    consumed = 0

    def lines() -> Iterator[str]:
        nonlocal consumed
        for line in io.StringIO(text, newline=""):
            consumed += len(line)
            yield line

    # csv.reader pulls exactly the lines of one record at a time, so `consumed` is where each record ends.
    reader = csv.reader(lines(), strict=True)
    records: list[tuple[list[str], int]] = []
    try:
        records.extend((fields, consumed) for fields in reader if fields)
    except csv.Error as e:  # strict: an open quote at the very end is an error, not a value
        if consumed < len(text):
            raise ResultsError(f"{name}: line {reader.line_num} is damaged ({e}); fix or remove it") from None
    else:
        if records and _cut_short(records, text):
            records.pop()
    good_end = records[-1][1] if records else 0
    complete_size = bom + len(text[:good_end].encode("utf-8", errors="surrogateescape"))
    partial = data[complete_size:]
    if not partial.strip():  # trailing blank lines are no row
        complete_size, partial = len(data), b""
    if not records:
        return CsvContent([], [], complete_size, partial)
    header = records[0][0]
    for number, (fields, _) in enumerate(records[1:], start=2):
        if len(fields) != len(header):
            raise ResultsError(
                f"{name}: row {number} has {len(fields)} fields, the header {len(header)}; fix or remove that row"
            )
    rows = [dict(zip(header, fields, strict=True)) for fields, _ in records[1:]]
    return CsvContent(header, rows, complete_size, partial)


def _cut_short(records: list[tuple[list[str], int]], text: str) -> bool:
    """Whether the last record lacks its line break, or (after the header) some of its fields."""
    fields, end = records[-1]
    return text[end - 1] not in "\r\n" or (len(records) > 1 and len(fields) < len(records[0][0]))


# Without these a file is not a results CSV at all; other missing columns just read as "not measured" (so files
# written before a grouping column beyond the contract existed, such as flint_serving, still read).
REQUIRED_COLUMNS = ["run_id", *(c for c in GROUP_COLUMNS if c in CONTRACT_COLUMNS), "stop_reason"]


def read_runs(path: str | Path, skip_bad_rows: bool = False) -> list[ResultRow]:
    """The runs of a results CSV as typed rows, values read by column name (missing columns as not measured).

    For the read-only commands: they have nothing to say about a file without runs, so that is an error here.
    A last row cut short by a crash is left out, with a note on stderr. A row with a bad cell (bench.results.checks:
    one not of its column's type, an infinite or negative time, a count above its total, an unknown stop reason, a
    run id seen before) is a ResultsError naming the file, the row and the column; with `skip_bad_rows`, such rows are
    left out and counted in a warning.
    """
    path = Path(path)
    try:
        content = load_csv(path)
    except OSError as e:
        raise ResultsError(f"cannot read results file {path}: {e.strerror}; check the path") from e
    missing = [column for column in REQUIRED_COLUMNS if column not in content.header]
    if missing:
        raise ResultsError(
            f"{path} is not a bench results CSV (no column {', '.join(missing)}); pass a file bench run wrote"
        )
    if content.partial:
        log.warning("%s: its last row was cut short (a crash while writing it?); left out", path)
    rows, bad = _checked_rows([readable(cells) for cells in content.rows], path, skip_bad_rows)
    if bad:
        log.warning("%s: %d bad row(s) left out (--skip-bad-rows), the first: %s", path, len(bad), bad[0])
    if not rows:
        raise ResultsError(f"{path} has no runs yet; run the bench first")
    return rows


ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def readable(cells: Row) -> Row:
    """The row's cells with each byte that was not UTF-8 (kept by the reader as an escape) shown as U+FFFD: the
    read-only commands print, plot and write pages of them, where such escapes cannot be encoded."""
    if not ESCAPED_BYTE.search("".join(cells.values())):  # one search a row: the common case costs little
        return cells
    return {name: ESCAPED_BYTE.sub("\ufffd", value) for name, value in cells.items()}


def first_bad_row(cells: list[Row], path: Path) -> str | None:
    """The line naming the first of `cells` a reader would refuse (bench.results.checks), or None: what `merge`
    refuses to pass on. A run id seen twice is merge's own to settle (the same row kept once)."""
    for number, row_cells in enumerate(cells, start=2):
        if line := _checked_row(row_cells, number, path, set())[1]:
            return line
    return None


def _checked_rows(cells: list[Row], path: Path, skip: bool) -> tuple[list[ResultRow], list[str]]:
    """The rows whose cells pass bench.results.checks, and a line for each that does not (raised unless `skip`)."""
    rows: list[ResultRow] = []
    bad: list[str] = []
    seen_ids: set[str] = set()
    for number, row_cells in enumerate(cells, start=2):  # row 1 is the header, as a spreadsheet numbers them
        row, line = _checked_row(row_cells, number, path, seen_ids)
        if row is not None:
            rows.append(row)
            continue
        if not skip:
            raise ResultsError(f"{line}; fix or remove that row, or pass --skip-bad-rows to leave such rows out")
        bad.append(line)
    return rows, bad


def _checked_row(row_cells: Row, number: int, path: Path, seen_ids: set[str]) -> tuple[ResultRow | None, str]:
    """The typed row, or None and the line naming its file, row number, run and the first rule it breaks."""
    problem: BadCell | None
    try:
        row = ResultRow.from_cells(row_cells)
        problem = bad_cell(row, seen_ids)
    except CellError as e:
        problem = BadCell(e.column, e.problem)
    if problem is None:
        return row, ""
    run = (row_cells.get("run_id") or "").strip()
    return None, f"{path}: row {number}{f' (run {run})' if run else ''}, column {problem.column}: {problem.problem}"


def with_added_columns(header: Sequence[str], rows: Iterable[Row]) -> list[Row]:
    """Copies of `rows` with the value every row had in a column the file predates (ADDED_COLUMN_VALUES)."""
    added = {column: value for column, value in ADDED_COLUMN_VALUES.items() if column not in header}
    return [{**row, **added} for row in rows]


def measured(rows: Iterable[ResultRow], column: str) -> list[float]:
    """The measured values of one column, in row order, skipping empty ones."""
    values = (row.number(column) for row in rows)
    return [value for value in values if value is not None]


def is_completed(row: ResultRow) -> bool:
    """A run completed when the agent stopped with `done` and every hidden test passed (both counts measured)."""
    passed, total = row.hidden_passed, row.hidden_total
    return row.stop_reason == "done" and passed is not None and total is not None and passed == total
