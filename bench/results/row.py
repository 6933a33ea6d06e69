"""The results row: one typed field per CSV column, in column order, each with what it means.

ResultRow, made of its column groups (ROW_GROUPS: the contract's, the servers' time, the summaries', the detail, the
agent's requests, speculative decoding),
is the one model of the results CSV: the header, the reader, the comparison keys and directions
(bench.results.schema) and docs/results.md (`python -m bench.results.docs`) all come from it. Producers fill its
fields with typed values; text is made once, in `cells()`, and read back once, in `from_cells()`. Adding a column is
one field in its group plus the code that measures it.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from bench.results.agent_columns import AgentRequestColumns
from bench.results.column import Column, Value, as_number, cell, columns_of, fits
from bench.results.contract import ContractColumns
from bench.results.detail_columns import DetailColumns
from bench.results.server_time import ServerTimeColumns
from bench.results.speculative_columns import SpeculativeColumns
from bench.results.summary_columns import SummaryColumns

ROW_GROUPS = (
    ContractColumns,
    ServerTimeColumns,
    SummaryColumns,
    DetailColumns,
    AgentRequestColumns,
    SpeculativeColumns,
)  # the row's column groups, in CSV order


# The row is made of its column groups, each a module of its own, in CSV order: the contract's
# (bench/results/contract.py), the servers' time (bench/results/server_time.py), the summaries'
# (bench/results/summary_columns.py), the detail (bench/results/detail_columns.py), the agent's requests
# (bench/results/agent_columns.py), speculative decoding (bench/results/speculative_columns.py). A dataclass takes
# its bases' fields last base first, so the groups are listed here last first; ROW_GROUPS says them in CSV order.
@dataclass
class ResultRow(
    SpeculativeColumns, AgentRequestColumns, DetailColumns, SummaryColumns, ServerTimeColumns, ContractColumns
):
    """One run: the columns of each group, in CSV order. None means not measured (an empty cell); a text column's
    empty value is ""."""

    def __post_init__(self) -> None:
        for name, kind in _empty_when_none():  # text and list columns start empty rather than None
            if getattr(self, name) is None:
                setattr(self, name, [] if kind is list else "")

    def value(self, name: str) -> Value:
        if name not in columns_by_name():
            raise KeyError(f"no column {name!r} in the results row")
        return typing.cast(Value, getattr(self, name))

    def text(self, name: str) -> str:
        """The column's value as its CSV cell."""
        return cell(self.value(name))

    def number(self, name: str) -> float | None:
        """A numeric column's value, or a text column's read as a number (ResultsError naming the run if not one)."""
        value = self.value(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return None if value is None else as_number(cell(value), name, self.run_id or "?")

    def cells(self) -> dict[str, str]:
        """Every column's CSV cell, in column order: the one place a row becomes text."""
        out = {}
        for column in model():
            value = getattr(self, column.name)
            if not fits(column.kind, value):
                raise TypeError(f"results row: {column.name} holds {value!r}, not {column.kind.__name__}")
            out[column.name] = cell(value)
        return out

    @classmethod
    def from_cells(cls, cells: Mapping[str, str]) -> ResultRow:
        """A row read back from its cells by column name; a column the file predates gets its `before` value,
        columns the model does not know are left out. ResultsError names the run of a cell that does not parse."""
        run_id = (cells.get("run_id") or "?").strip()
        values: dict[str, Any] = {}
        for column in model():
            text = cells.get(column.name)
            if text is None:
                text = column.before or ""
            values[column.name] = column.parse(text, run_id)
        return cls(**values)


@cache
def model() -> tuple[Column, ...]:
    """The columns, in CSV order, with their kind taken from the field's annotation."""
    return columns_of(ResultRow)


@cache
def columns_by_name() -> dict[str, Column]:
    return {column.name: column for column in model()}


@cache  # a row is made per run read: its text and list columns, found once
def _empty_when_none() -> tuple[tuple[str, type], ...]:
    return tuple((column.name, column.kind) for column in model() if column.kind in (str, list))
