"""Appending rows to the results CSV a bench writes, and reading back the file a bench continues.

Rows are appended (and forced to disk) the moment a run ends, so an interrupted bench loses nothing it measured.
A row is written whole or not at all: it is encoded first and written in one `os.write`; when the disk fills up
midway, the file is cut back to the rows it held and the error names the file. A row is only ever added under the
exact header it was made for (same columns, same order): a file of another column layout is refused with the way
on (`--out`, or `python -m bench migrate`). A last row cut short by a crash is moved to `<csv>.partial`, never glued
onto and never dropped; its run is then not in the file, so `--resume` runs it again.
"""

from __future__ import annotations

import csv
import io
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench.errors import ResultsError
from bench.results.read import REQUIRED_COLUMNS, CsvContent, Row, load_csv
from bench.results.schema import (
    COLUMNS,
    GROUP_COLUMNS,
    INFRA_STOP_REASON,
    INPUT_COLUMNS,
    SETUP_COLUMNS,
    SHARED_INPUT_COLUMNS,
    run_key,
)

log = logging.getLogger(__name__)


def read_rows(path: Path, columns: Sequence[str] = COLUMNS) -> list[Row]:
    """The complete rows of the file a bench appends to (an absent or empty file has none).

    Refuses (ResultsError) a file that is not a results file, or whose header is not exactly `columns`. Reading
    changes nothing: a last row cut short is left out here and set aside by the writer (set_aside_partial_row).
    """
    content = _load(path)
    if content is None or not content.header:
        return []
    check_header(path, content.header, columns)
    return content.rows


def completed_keys(rows: Iterable[Row]) -> set[tuple[str, ...]]:
    """The run keys (schema.run_key) --resume skips: every row but infra_error ones, which measured nothing about
    the agent and so run again. Their rows stay in the file, their artifacts in results/runs/<run_id>/."""
    return {run_key(row) for row in rows if row.get("stop_reason") != INFRA_STOP_REASON}


def lost_runs(rows: Iterable[Row]) -> list[Row]:
    """The infra_error rows whose run no later row of the file measured: the runs still lost to the infrastructure
    (one that `--resume` ran again is not; a row that only shares its run key, not started after it, does not say
    it was run again)."""
    rows = list(rows)
    measured_at: dict[tuple[str, ...], str] = {}
    for row in rows:
        if row.get("stop_reason") != INFRA_STOP_REASON:
            key = run_key(row)
            measured_at[key] = max(measured_at.get(key, ""), row.get("started_at") or "")
    infra = [row for row in rows if row.get("stop_reason") == INFRA_STOP_REASON]
    return [row for row in infra if measured_at.get(run_key(row), "") <= (row.get("started_at") or "")]


def check_header(path: Path, header: Sequence[str], columns: Sequence[str] = COLUMNS) -> None:
    """Rows are only added under the exact header they were made for: any other layout is refused."""
    if list(header) == list(columns):
        return
    lacking = [column for column in REQUIRED_COLUMNS if column not in header]
    if lacking:
        raise ResultsError(f"{path} is not a results file of this bench (no column {lacking[0]!r}); use another --out")
    raise ResultsError(
        f"{path} was written with other columns ({describe_difference(header, columns)}); write to a new file "
        f"with --out, or rewrite it under the current columns with: python -m bench migrate {path}"
    )


def describe_difference(header: Sequence[str], columns: Sequence[str]) -> str:
    """`lacks reprocessed_check, jeff_model_s; has old_column`, or where the order first differs."""
    lacking = [column for column in columns if column not in header]
    extra = [column for column in header if column not in columns]
    parts = [f"lacks {', '.join(lacking)}"] if lacking else []
    parts += [f"has {', '.join(extra)}"] if extra else []
    if not parts:
        index = next(i for i, (a, b) in enumerate(zip(header, columns, strict=False)) if a != b)
        parts = [f"same names in another order: column {index + 1} is {header[index]!r}, now {columns[index]!r}"]
    return "; ".join(parts)


def check_same_inputs(path: Path, rows: list[Row], planned: dict[str, str]) -> None:
    """Refuse to add rows made with other inputs to an existing file: the models and sampling across the whole file,
    one version of each agent (a file may hold several agents, bench/agents/), and every setting of the comparison key
    (step limit, keep, clear_at, fixture hash, server build, ...) across the runs of the same configuration, which
    compare would otherwise have to split."""
    for row in rows:
        for column in SHARED_INPUT_COLUMNS:
            if row.get(column, "") != planned.get(column, ""):
                raise _different(path=path, column=column, row=row, planned=planned, which="runs")
        agent = row.get("agent") or "article"  # files from before the agent column hold the article's runs
        if agent == (planned.get("agent") or "article") and row.get("agent_version") != planned.get("agent_version"):
            raise _different(path=path, column="agent_version", row=row, planned=planned, which=f"runs of {agent}")
        if all(row.get(column, "") == planned.get(column, "") for column in GROUP_COLUMNS):
            for column in SETUP_COLUMNS:  # a setting measured during the run (gpu_name, ...) is not planned yet;
                planned_too = planned.get(column) or column in INPUT_COLUMNS  # an input's empty is one: no flags
                if planned_too and row.get(column, "") != planned.get(column, ""):
                    raise _different(
                        path=path,
                        column=column,
                        row=row,
                        planned=planned,
                        which=f"runs of {row.get('fixture')} {row.get('preset')}",
                    )


def _different(path: Path, column: str, row: Row, planned: dict[str, str], which: str) -> ResultsError:
    return ResultsError(
        f"{path} holds {which} with a different {column} ({row.get(column) or 'empty'} vs "
        f"{planned.get(column) or 'empty'}, this bench's); write these runs to a new file with --out"
    )


def set_aside_partial_row(path: Path) -> str | None:
    """Move a last row cut short by a crash to `<csv>.partial` (appended there, so nothing is ever lost) and cut
    the file back to its complete rows. Returns the one line to show the user, or None when the file was whole."""
    content = _load(path)
    return _set_aside(path, content) if content is not None and content.partial else None


def append_row(path: Path, row: dict[str, str], columns: Sequence[str] = COLUMNS) -> None:
    """Append one row and force it to disk: a crash after this line loses nothing measured.

    The header comes first in a new or empty file; an existing file must have exactly `columns` as its header.
    The whole file is read first (a few hundred KiB for a large bench: nothing next to a run of minutes), so a
    row cut short is found wherever the cut fell, even inside a quoted value.
    """
    unknown = set(row) - set(columns)
    if unknown:
        raise ValueError(f"row has columns outside the schema: {sorted(unknown)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    content = _load(path)
    if content is not None and content.header:
        check_header(path, content.header, columns)
    if content is not None and content.partial:  # never glue a row onto half of another
        log.warning("%s", _set_aside(path, content))
    line = encode_line([row.get(column, "") for column in columns])
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        write_whole(fd, line if size else encode_line(columns) + line, path, size)
    finally:
        os.close(fd)


def encode_line(values: Sequence[str]) -> bytes:
    """One CSV record as bytes, quoted as csv.writer does, ending with \\r\\n (the files' line break)."""
    buffer = io.StringIO()
    csv.writer(buffer).writerow(values)
    text = buffer.getvalue()
    try:  # bytes that were not UTF-8 where they were read (a merged shard's cell) go back out as they came
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate of another origin: no bytes to give back, so shown as such
        return text.encode("utf-8", errors="replace")


def write_whole(fd: int, data: bytes, path: Path, size_before: int) -> None:
    """Write `data` at the end of the file and fsync it; on any failure cut the file back to `size_before`, so
    every row written before stays intact and no half row is left, and raise a one-line ResultsError."""
    try:
        written = 0
        while written < len(data):  # a full disk can take part of a write before it refuses the rest
            count = os.write(fd, data[written:])
            if count == 0:
                raise OSError(28, os.strerror(28))
            written += count
        os.fsync(fd)
    except OSError as e:
        os.ftruncate(fd, size_before)
        raise ResultsError(
            f"cannot write a row to {path}: {e.strerror or e}; the rows already in it are intact. Free some space, "
            "then continue with --resume (this run runs again)"
        ) from None


def _load(path: Path) -> CsvContent | None:
    try:
        return load_csv(path)
    except FileNotFoundError:
        return None


def _set_aside(path: Path, content: CsvContent) -> str:
    side = path.with_name(path.name + ".partial")
    with open(side, "ab") as f:
        f.write(content.partial + (b"" if content.partial.endswith(b"\n") else b"\n"))
        f.flush()
        os.fsync(f.fileno())
    os.truncate(path, content.complete_size)
    return (
        f"{path}: its last row was cut short (a crash while writing it); moved to {side.name} beside it, "
        "and that run will run again"
    )
