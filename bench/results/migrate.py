"""`python -m bench migrate OLD.csv`: rewrite a results file under the current columns, every value under its own name.

For a file written by another version of the bench (columns added, removed or reordered since), which a bench
refuses to append to. Values are read by column name and written back under the same name; a column this version
lacks may only be dropped when no row has a value in it. The original file is kept as `<csv>.bak`, and a last row
cut short by a crash goes to `<csv>.partial` as when a bench continues the file.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from bench.atomic_file import write_atomically
from bench.errors import ResultsError
from bench.results.append import describe_difference, encode_line, set_aside_partial_row
from bench.results.read import REQUIRED_COLUMNS, load_csv, with_added_columns
from bench.results.schema import COLUMNS


def migrate(path: Path, columns: Sequence[str] = COLUMNS) -> str:
    """Rewrite `path` under `columns`; returns the one line that says what was done."""
    try:
        content = load_csv(path)
    except OSError as e:
        raise ResultsError(f"cannot read {path}: {e.strerror}; check the path") from e
    lacking = [column for column in REQUIRED_COLUMNS if column not in content.header]
    if lacking:
        raise ResultsError(f"{path} is not a results file of this bench (no column {lacking[0]!r}); nothing to migrate")
    if content.header == list(columns) and not content.partial:
        return f"{path} already has the current columns; nothing to do"
    dropped = [column for column in content.header if column not in columns]
    holding = [column for column in dropped if any(row.get(column) for row in content.rows)]
    if holding:
        raise ResultsError(
            f"{path} has values in columns this version does not know ({', '.join(holding)}), which a rewrite would "
            "lose; keep the file as it is and write new runs to a new file with --out"
        )
    backup = path.with_name(path.name + ".bak")
    if backup.exists():
        raise ResultsError(f"{backup} exists from an earlier migration; move it away first")
    change = describe_difference(content.header, columns) if content.header != list(columns) else "same columns"
    note = set_aside_partial_row(path)
    rows = with_added_columns(content.header, content.rows)
    lines = [encode_line(columns), *(encode_line([row.get(c, "") for c in columns]) for row in rows)]
    _replace(path, b"".join(lines), backup)
    out = f"migrated {path}: {len(content.rows)} rows rewritten under the current columns ({change}); "
    out += f"the original is kept as {backup.name}"
    return out + (f". {note}" if note else "")


def _replace(path: Path, data: bytes, backup: Path) -> None:
    """Keep the original as `backup` and put `data` in its place; a crash midway leaves one of the two whole."""
    shutil.copy2(path, backup)
    write_atomically(path, data)


def command(path: Path) -> int:
    """`bench migrate OLD.csv` (bench/cli/migrate.py)."""
    print(migrate(path))
    return 0
