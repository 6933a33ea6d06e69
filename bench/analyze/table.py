"""Grouping rows by configuration and formatting numbers the same way in every command.

A median or range is taken over the measured values only, and shown as "n/a" when there are none.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from bench.results.read import is_completed, measured
from bench.results.row import ResultRow
from bench.results.schema import GROUP_COLUMNS, INFRA_STOP_REASON, NATIVE_SERVING, SETUP_COLUMNS

# A configuration: its names, and what it ran on (runs that differ in any of these are never pooled).
KEY_COLUMNS = [*GROUP_COLUMNS, *SETUP_COLUMNS]
SHA_SHOWN = 12  # characters of a sha256 in a heading
MAX_DECIMALS = 6
LISTED_RUNS = 12  # a cell lists each run's value up to this many runs, and counts them beyond

GroupKey = tuple[str, ...]


def memory_method(value: str) -> str:
    """The method part of gpu_mem_method: before any `;` notes; every `unavailable: <reason>` is one method."""
    method = value.split(";", 1)[0].strip()
    return "unavailable" if method.startswith("unavailable") else method


def group_key(row: ResultRow) -> GroupKey:
    """The configuration a run belongs to: its names (GROUP_COLUMNS) and what it ran on (SETUP_COLUMNS). Kept on
    the row once made (analysis never changes a row it read): a 1,000-row comparison asks for it thousands of times."""
    key: GroupKey | None = row.__dict__.get("_group_key")
    if key is None:
        key = tuple(memory_method(row.text(c)) if c == "gpu_mem_method" else row.text(c) for c in KEY_COLUMNS)
        row.__dict__["_group_key"] = key
    return key


def names_of(key: GroupKey) -> GroupKey:
    """The GROUP_COLUMNS part of a key: fixture, preset, ctx, model names."""
    return key[: len(GROUP_COLUMNS)]


def group_rows(rows: Iterable[ResultRow]) -> dict[GroupKey, list[ResultRow]]:
    """Rows by configuration, groups in the order they first appear (the order the bench ran them)."""
    groups: dict[GroupKey, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault(group_key(row), []).append(row)
    return groups


def agent_runs(rows: Iterable[ResultRow]) -> list[ResultRow]:
    """The runs that measured the agent: all but infra_error ones (a dead server says nothing about the agent)."""
    return [row for row in rows if row.stop_reason != INFRA_STOP_REASON]


def infra_errors(rows: Iterable[ResultRow]) -> int:
    return sum(row.stop_reason == INFRA_STOP_REASON for row in rows)


def varying_columns(keys: Sequence[GroupKey]) -> list[int]:
    """Indexes of the key columns whose value differs between groups; equal-everywhere ones say nothing."""
    return [i for i in range(len(KEY_COLUMNS)) if len({key[i] for key in keys}) > 1]


def key_part(key: GroupKey, index: int) -> str:
    """One column of a key as a heading shows it: `part3`, `ctx 8192`, `server_build b4100`, `no jeff_model`."""
    column, value = KEY_COLUMNS[index], key[index]
    if not value:
        return f"no {column}"
    if column == "ctx":
        return f"ctx {value}"
    if column in SETUP_COLUMNS or column == "flint_serving":
        return f"{column} {value[:SHA_SHOWN] if column.endswith('sha256') else value}"
    return value


def group_title(key: GroupKey, shown: Sequence[int], hidden: Collection[int] = ()) -> str:
    """`part3 · ctx 8192`: the key columns that vary, or the configuration's names when none does (how Flint was
    served only when it was not the usual way: `flint_serving forced_tools`), never the columns at `hidden`."""
    usual = {GROUP_COLUMNS.index("flint_serving"): NATIVE_SERVING}
    indexes = shown or [i for i in range(len(GROUP_COLUMNS)) if usual.get(i) != key[i] and i not in hidden]
    return " · ".join(key_part(key, i) for i in indexes)


def constant_columns(keys: Sequence[GroupKey]) -> list[str]:
    """`fixture todo_repo` for each key column that is the same in every group."""
    varying = set(varying_columns(keys))
    out = []
    for i, column in enumerate(KEY_COLUMNS):
        if keys and i not in varying:
            value = keys[0][i][:SHA_SHOWN] if column.endswith("sha256") else keys[0][i]
            out.append(f"{column} {value or 'n/a'}")
    return out


@dataclass(frozen=True)
class Spread:
    """Median and range of the measured values of a column; `count` is how many were measured."""

    median: float
    low: float
    high: float
    count: int

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high


def spread(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values), len(values))


def fmt_number(value: float | None) -> str:
    """Whole numbers with thousands separators (14,689); fractions with one decimal (25.3), and below 1 with two
    significant digits (0.27, 0.043), so that a sub-second change shows rather than reading `±0.0`."""
    if value is None:
        return "n/a"
    if value == int(value) or abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    decimals = min(1 - math.floor(math.log10(abs(value))), MAX_DECIMALS)
    return f"{value:.{decimals}f}"


def fmt_spread(stats: Spread | None) -> str:
    """`124 [96–231]`: median and range; just the value when one run was measured."""
    if stats is None:
        return "n/a"
    if stats.count == 1:
        return fmt_number(stats.median)
    return f"{fmt_number(stats.median)} [{fmt_number(stats.low)}–{fmt_number(stats.high)}]"


def fmt_measured(rows: Sequence[ResultRow], column: str) -> str:
    """`124 [96–231]` over the runs that measured `column`."""
    return fmt_spread(spread(measured(rows, column)))


def fmt_cell(row: ResultRow, column: str) -> str:
    """One run's value as shown in a table: `14,689`, `25.3`, or "n/a" when not measured."""
    return fmt_number(row.number(column))


def fmt_values(rows: Iterable[ResultRow], column: str) -> str:
    """Each run's value in row order, e.g. hidden tests passed "3, 6, 6"; "n/a" for a run not measured. Past
    LISTED_RUNS runs, each value counted instead, smallest first: `2 ×148, 3 ×2`."""
    cells = [(row.number(column), fmt_cell(row, column)) for row in rows]
    if len(cells) <= LISTED_RUNS:
        return ", ".join(text for _, text in cells)
    counts = Counter(cells)
    ordered = sorted(counts, key=lambda cell: (cell[0] is None, cell[0] or 0.0))
    return ", ".join(f"{text} ×{counts[(value, text)]}" for value, text in ordered)


def fmt_completed(rows: Sequence[ResultRow]) -> str:
    """`2 of 3`: how many of the agent's runs completed (infra_error runs are not among them)."""
    runs = agent_runs(rows)
    return f"{sum(is_completed(row) for row in runs)} of {len(runs)}"


def fmt_percent(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.0f}%"


def count_values(values: Iterable[str]) -> str:
    """`done 2, step_limit 1`, most frequent first; empty values are counted as "n/a"."""
    counts: dict[str, int] = {}
    for value in values:
        counts[value or "n/a"] = counts.get(value or "n/a", 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{value} {count}" for value, count in ordered) or "none"


def stop_reasons(rows: Iterable[ResultRow]) -> str:
    """`done 2, step_limit 1`: the runs' stop reasons counted."""
    return count_values(row.stop_reason for row in rows)


def slug(text: str) -> str:
    """A file name's part for a group's title: `todo-repo-part3-ctx-8192`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "group"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table; pipes inside cells are escaped."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    body = [line(headers), "| " + " | ".join("---" for _ in headers) + " |"]
    body.extend(line(cells) for cells in rows)
    return "\n".join(body)
