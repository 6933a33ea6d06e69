"""What a bench prints at its end: per configuration of its results file, the runs completed and the medians, the
failure labels counted; then where the results are and the commands that read them (compare --by where the file
holds configurations that one setting tells apart: bench.analyze.by_setting)."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.analyze.by_setting import leading, suggestions
from bench.analyze.table import (
    KEY_COLUMNS,
    agent_runs,
    fmt_completed,
    fmt_number,
    group_rows,
    group_title,
    infra_errors,
    spread,
    varying_columns,
)
from bench.errors import ResultsError
from bench.results.read import measured
from bench.results.row import ResultRow
from bench.run.outputs import log_file
from bench.run.screen import terminal_width

Row = dict[str, str]
COLUMNS = [("wall s", "wall_s"), ("steps", "steps"), ("reprocessed", "prompt_tokens_reprocessed")]  # medians


def ending(rows: Sequence[Row], out: Path, ran: int) -> str:
    """The per-group table of the file's rows (medians of the agent's runs), then the results path and what to run
    next ("" with no rows)."""
    typed = _typed(rows)
    if not typed:
        return ""
    groups = group_rows(typed)
    varying = leading([KEY_COLUMNS[i] for i in varying_columns(list(groups))]) or ["fixture", "preset", "ctx"]
    shown = [KEY_COLUMNS.index(column) for column in varying]
    header = ["configuration", "completed", *(title for title, _ in COLUMNS)]
    lines, labels_of = [header], ["failure labels"]
    for key, members in groups.items():
        runs = agent_runs(members)
        completed = fmt_completed(runs) + (f" (+{infra_errors(members)} infra_error)" if infra_errors(members) else "")
        labels = Counter(label for row in runs for label in row.failure_labels)
        counted = ", ".join(f"{label} {n}" for label, n in labels.most_common()) or "none"
        figures = [fmt_number(found.median) if (found := spread(measured(runs, c))) else "n/a" for _, c in COLUMNS]
        lines.append([group_title(key, shown), completed, *figures])
        labels_of.append(counted)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    table = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines]
    if max(len(line) for line in table) + max(len(text) for text in labels_of) + 2 < terminal_width():
        table = [f"{line}  {labels}" for line, labels in zip(table, labels_of, strict=True)]
    else:  # the labels under their group's line, so that the figures stay in columns
        table = [
            f"{table[0].rstrip()}  (failure labels below)",
            *(f"{line.rstrip()}\n    {labels}" for line, labels in zip(table[1:], labels_of[1:], strict=True)),
        ]
    rows_text = f"{len(typed)} row{'s' if len(typed) != 1 else ''}"
    said = [f"results: {out} ({rows_text}, {ran} from this bench)", f"log: {log_file(out)}"]
    return "\n".join([*table, *said, *next_commands(out, list(groups))])


def next_commands(out: Path, keys: Sequence[tuple[str, ...]]) -> list[str]:
    """`next: bench view FILE`, the report, and the compare --by that pairs this file's configurations."""
    path = shlex.quote(str(out))
    found = [f"bench view {path}", f"bench report {path}"]
    found += [f"bench compare {path} --by {setting}" for setting in suggestions([keys])]
    return [f"next: {found[0]}", *(f"      {command}" for command in found[1:])]


def _typed(rows: Sequence[Row]) -> list[ResultRow]:
    """The rows as the analysis reads them; a row that does not read (a column of another version) is left out."""
    typed = []
    for cells in rows:
        try:
            typed.append(ResultRow.from_cells(cells))
        except ResultsError:
            continue
    return typed
