"""`python -m bench merge SHARD.csv ... --out MERGED.csv [--config C [--shards N]] [--require-complete]
[--keep-extra]`: the shards of one matrix (`bench run --shard I/N`, bench.run.shards) as one results file.

The files must be of one bench: the current columns, and one value across all of them in each column a results
file holds one value of (the agent version, the models, the sampling: the row model's per-file columns, plus the
model names); anything else is refused in one line naming the file and the column. A row found twice (the same
run id: a shard's file given twice, or a merged file merged again) is kept once. The merged rows are ordered by
start time, so merging is idempotent and the order of the files does not matter.

With the matrix (--config and the matrix flags of `bench run`), every row must belong to it (bench.run.merge_check:
a planned run, of the matrix's split, settings and setup, measured once): the others are refused, naming each, or
with --keep-extra kept apart in `<out>-extra.csv` and listed. The planned runs that no shard delivered (no row, or
only infra_error rows) are listed, in `<out>-missing.txt` too; `--require-complete` then exits 1. Without it, two
rows of one planned run are both kept, and said so. What was merged, file by file, is written to `<out>-merge.txt`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.atomic_file import write_atomically
from bench.config import BenchConfig
from bench.errors import ConfigError, ResultsError
from bench.results.append import encode_line, read_rows
from bench.results.lock import ResultsLock, writer_of
from bench.results.read import Row, first_bad_row
from bench.results.schema import COLUMNS, INFRA_STOP_REASON, SHARED_INPUT_COLUMNS
from bench.run.merge_check import Extra, Matrix, split
from bench.run.shards import PlannedId, describe, row_id

log = logging.getLogger(__name__)
# One value across every merged file: the row model's per-file columns, and the models by name (external servers
# leave the sha256 columns empty).
ONE_VALUE_COLUMNS = list(dict.fromkeys([*SHARED_INPUT_COLUMNS, "flint_model", "jeff_model", "git_sha"]))


@dataclass
class Merged:
    rows: list[Row]
    duplicates: int = 0  # rows dropped: the same run id seen again
    twice: dict[PlannedId, list[Row]] = field(default_factory=dict)  # planned runs with more than one row
    missing: list[PlannedId] | None = None  # None: no matrix given to check against
    extras: list[Extra] = field(default_factory=list)  # rows that do not belong to the matrix
    per_file: dict[Path, list[str]] = field(default_factory=dict)  # each file's rows, by the shard each names


def merge_files(paths: Sequence[Path], planned: Iterable[PlannedId] | None = None) -> Merged:
    """The rows of `paths` as one file's rows; ResultsError when they are not of one bench."""
    if not paths:
        raise ResultsError("merge: no results files given")
    seen: dict[str, tuple[Row, Path]] = {}
    first: dict[str, tuple[str, Path]] = {}
    duplicates, per_file = 0, {}
    for path in paths:
        if not path.is_file():
            raise ResultsError(f"merge: {path} not found (or not a file)")
        rows = read_rows(path)  # refuses another column layout, naming the file and the columns
        if bad := first_bad_row(rows, path):  # what compare and report would refuse is not passed on
            raise ResultsError(f"merge: {bad}; fix or remove that row (nothing was written)")
        per_file[path] = [row.get("shard") or "-" for row in rows]
        for row in rows:
            for column in ONE_VALUE_COLUMNS:
                value = row.get(column, "")
                if column not in first:
                    first[column] = (value, path)
                elif first[column][0] != value:
                    theirs, where = first[column]
                    raise ResultsError(
                        f"{path}: column {column} is {value or 'empty'!r} in run {row['run_id']}, but "
                        f"{theirs or 'empty'!r} in {where}: these files are not shards of one bench"
                    )
            run_id = row["run_id"]
            if run_id in seen:
                if seen[run_id][0] != row:
                    raise ResultsError(
                        f"{path}: run {run_id} differs from the row of that run in {seen[run_id][1]}: one of the "
                        "two files was edited; merge only files as the bench wrote them"
                    )
                duplicates += 1
                continue
            seen[run_id] = (row, path)
    rows = sorted((row for row, _ in seen.values()), key=lambda row: (row.get("started_at", ""), row["run_id"]))
    merged = Merged(rows, duplicates, per_file=per_file)
    count_runs(merged, planned)
    return merged


def count_runs(merged: Merged, planned: Iterable[PlannedId] | None) -> None:
    """The planned runs of more than one row, and (given the plan) those no row measured."""
    by_run: dict[PlannedId, list[Row]] = {}
    for row in merged.rows:
        by_run.setdefault(row_id(row), []).append(row)
    merged.twice = {run: found for run, found in by_run.items() if len(found) > 1}
    if planned is not None:
        merged.missing = [
            run for run in planned if all(row["stop_reason"] == INFRA_STOP_REASON for row in by_run.get(run, []))
        ]


def write_rows(out: Path, rows: Sequence[Row]) -> None:
    """The merged file, written whole (a new file, then renamed: a crash leaves the old one or the new one)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join([encode_line(COLUMNS), *(encode_line([row.get(c, "") for c in COLUMNS]) for row in rows)])
    write_atomically(out, data)


def missing_file(out: Path) -> Path:
    return out.with_name(f"{out.stem}-missing.txt")


def extra_file(out: Path) -> Path:
    return out.with_name(f"{out.stem}-extra{out.suffix}")


def report_file(out: Path) -> Path:
    return out.with_name(f"{out.stem}-merge.txt")


def merge(paths: Sequence[Path], out: Path, matrix: Matrix | None = None, keep_extra: bool = False) -> Merged:
    """Merge `paths` into `out` (which may be one of them): the rows that belong to `matrix` when given (the others
    refused, or kept apart in `<out>-extra.csv`), the missing runs into `<out>-missing.txt`."""
    if out.exists() and out.resolve() not in {path.resolve() for path in paths}:
        raise ResultsError(f"merge: {out} exists; merge into a new file, or give {out} among the files to merge")
    for path in paths:  # a shard still running would be merged without its last runs
        if (writer := writer_of(path)) is not None:
            raise ResultsError(
                f"merge: a bench (pid {writer or 'unknown'}) is still writing {path}: merge once it ends"
            )
    lock = ResultsLock(out)  # a bench writing `out` refuses the merge; one started on it meanwhile is refused
    lock.acquire()
    try:
        return _merge(paths, out, matrix, keep_extra)
    finally:
        lock.release()


def _merge(paths: Sequence[Path], out: Path, matrix: Matrix | None, keep_extra: bool) -> Merged:
    merged = merge_files(paths)
    if matrix is not None:
        merged.rows, merged.extras = split(merged.rows, matrix)
        if merged.extras and not keep_extra:
            for extra in merged.extras:
                log.error("does not belong to the matrix: %s", extra.line())
            raise ResultsError(
                f"merge: {len(merged.extras)} rows do not belong to the matrix (first: {merged.extras[0].line()}); "
                "leave their files out, or merge with --keep-extra to keep them apart in "
                f"{extra_file(out).name} (nothing was written)"
            )
        count_runs(merged, matrix.planned)
    write_rows(out, merged.rows)
    if merged.extras:
        write_rows(extra_file(out), [extra.row for extra in merged.extras])
    if merged.missing is not None:
        lines = [describe(run) for run in merged.missing]
        missing_file(out).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return merged


def summary(merged: Merged, paths: Sequence[Path], out: Path) -> list[str]:
    """What the merge did, one line each: file by file, what was kept apart, what is missing."""
    infra = sum(row["stop_reason"] == INFRA_STOP_REASON for row in merged.rows)
    lines = [
        f"merged {len(paths)} files: {len(merged.rows)} rows -> {out}" + (f" ({infra} infra_error)" if infra else "")
    ]
    for path, shards in merged.per_file.items():
        named = f" of shard {', '.join(sorted(set(shards)))}" if shards else ""
        lines.append(f"  {path}: {len(shards)} rows{named}")
    if merged.duplicates:
        lines.append(f"{merged.duplicates} rows found twice (the same run id) were kept once")
    if merged.extras:
        lines.append(f"{len(merged.extras)} rows that do not belong to the matrix, kept apart in {extra_file(out)}:")
        lines += [f"  extra: {extra.line()}" for extra in merged.extras]
    for run, rows in merged.twice.items():
        ends = ", ".join(f"{row['run_id']} ({row['stop_reason']}, shard {row.get('shard') or '-'})" for row in rows)
        lines.append(f"{describe(run)} has {len(rows)} rows, all kept: {ends}")
    if merged.missing is not None:
        where = missing_file(out)
        if merged.missing:
            lines.append(f"{len(merged.missing)} planned runs no shard delivered (listed in {where}):")
            lines += [f"  missing: {describe(run)}" for run in merged.missing]
        else:
            lines.append(f"every planned run was delivered ({where} is empty)")
    return lines


def command(
    paths: Sequence[Path],
    out: Path,
    config: BenchConfig | None,
    require_complete: bool,
    shards: int | None = None,
    keep_extra: bool = False,
    *,
    checkout: Path,
) -> int:
    """`python -m bench merge`: 0, or 1 when `require_complete` and a planned run is missing (`checkout`: this
    repository, whose fixtures the matrix plans by default)."""
    if config is None and (require_complete or keep_extra or shards is not None):
        raise ConfigError(
            "merge --require-complete, --keep-extra and --shards need the matrix: --config (and the matrix flags the "
            "shards ran)"
        )
    merged = merge(paths, out, Matrix.of(config, checkout, shards) if config is not None else None, keep_extra)
    lines = summary(merged, paths, out)
    report_file(out).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    for line in lines:
        log.log(
            logging.WARNING if any(w in line for w in ("missing", "all kept", "extra")) else logging.INFO, "%s", line
        )
    return 1 if require_complete and merged.missing else 0
