"""`RESUME=1` (--resume) without OUT= (--out): the bench continues the newest results file of the same matrix in the
results folder, rather than the new file a default name (the date and commit) would give, which would start over.

A file is of the same matrix when every row is a planned run's (its fixture, preset, ctx, rep, fixture hash and the
settings the matrix fixes: bench.run.plan.matrix_cells), and unfinished when a planned run has no row of the agent's
(infra_error rows run again). The newest such file by its last write wins; with none, the bench starts a new file and
says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from bench.config import BenchConfig
from bench.errors import ResultsError
from bench.results.append import read_rows, set_aside_partial_row
from bench.results.schema import INFRA_STOP_REASON
from bench.run.outputs import default_out
from bench.run.plan import matrix_cells, plan_runs
from bench.run.spelling import spelled

log = logging.getLogger(__name__)
Cells = dict[str, str]


def resumable(folder: Path, planned: Sequence[Cells]) -> tuple[Path, int] | None:
    """The newest unfinished results file of this matrix in `folder`, and how many planned runs it holds."""
    if not planned or not folder.is_dir():
        return None
    keys = {_key(cells, planned[0]) for cells in planned}
    files = [path for path in folder.glob("*.csv") if path.is_file() and "-shard" not in path.stem]
    for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            rows = read_rows(path)
        except (ResultsError, OSError, UnicodeDecodeError):
            continue  # not a results file of this version: not ours to continue
        if not rows or any(_key(row, planned[0]) not in keys for row in rows):
            continue
        measured = {_key(row, planned[0]) for row in rows if row.get("stop_reason") != INFRA_STOP_REASON}
        if len(measured) < len(keys):
            return path, len(measured)
    return None


def _key(cells: Cells, columns: Cells) -> tuple[str, ...]:
    return tuple(cells.get(column, "") for column in columns)


def results_file(config: BenchConfig, checkout: Path) -> Path:
    """The file a bench writes before any shard suffix: --out, else with --resume the newest unfinished file of its
    matrix (one line says which, in the user's spelling), else a new one in `checkout`'s results/ named by date and
    commit."""
    if config.out:
        return Path(config.out)
    new = default_out(checkout)
    if not config.resume or config.shard:
        return new
    planned = [matrix_cells(run, config) for run in plan_runs(config, checkout)]
    said = f"{spelled('resume')} without {spelled('out')}"
    found = resumable(new.parent, planned)
    if found is None:
        log.info("%s: no unfinished results file of this matrix in %s; starting %s", said, new.parent, new)
        return new
    path, held = found
    log.info(
        "%s: continuing %s, the newest unfinished file of this matrix (%d of %d runs)", said, path, held, len(planned)
    )
    return path


def rows_to_continue(out: Path, resume: bool) -> list[Cells]:
    """The rows `out` holds already, which a bench continues only when resuming (a row a crash left half-written is
    set aside first: its run runs again); a file with rows is refused otherwise, in one line."""
    if resume and (cut := set_aside_partial_row(out)):
        log.warning("%s", cut)
    existing = read_rows(out)
    if existing and not resume:
        again, other = spelled("resume"), spelled("out")  # make's variables under make
        raise ResultsError(f"{out} already holds {len(existing)} rows: pass {again} to continue it, or {other}")
    return existing
