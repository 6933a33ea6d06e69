"""One column of the results row: what it holds (type, unit, meaning), which way is better, what it keys; and the
one place a value becomes the text of a CSV cell and a cell's text becomes a value again.

An empty cell means "not measured" (None), never 0. Lists (failure labels, paths) are `;`-separated in their cell.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal

from bench.errors import ResultsError

Value = str | int | float | bool | list[str] | None  # a row's value before it becomes text
Better = Literal["lower", "higher"]
Keys = Literal["names", "setup"]  # a comparison's key: the configuration's names, or what it ran on
KINDS: dict[type, str] = {str: "text", int: "integer", float: "number", bool: "true/false", list: "list"}


@dataclass(frozen=True)
class Column:
    """What the model says about one column (bench.results.row.ResultRow declares them with `col`)."""

    name: str
    kind: type  # str, int, float, bool, or list (of strings)
    doc: str  # one line: what it holds, for docs/results.md
    unit: str = ""
    better: Better | None = None  # the direction compare and history call a change worse or better
    compare: Keys | None = None  # runs that differ in it are never pooled nor compared as one configuration
    resume: bool = False  # part of the --resume key: a planned run with these values is already measured
    per_file: bool = False  # one value across a results file (one agent version, one pair of models)
    contract: bool = False  # part of the documented contract: name and position fixed
    before: str | None = None  # the cell every row of a file from before this column had (such files still read)

    def text(self, value: Value) -> str:
        return cell(value)

    def parse(self, text: str, run_id: str = "?") -> Value:
        """A cell's value: None when empty (a text column's empty cell is ""), else of this column's kind."""
        text = text.strip()
        if self.kind is list:
            return [item.strip() for item in text.split(";") if item.strip()]
        if self.kind is str:
            return text
        if text == "":
            return None
        if self.kind is bool:
            if text.lower() not in ("true", "false"):
                raise self._not(text, run_id)
            return text.lower() == "true"
        number = as_number(text, self.name, run_id)
        if self.kind is float or number is None:
            return number
        if not number.is_integer():
            raise self._not(text, run_id)
        return int(number)

    def _not(self, text: str, run_id: str) -> ResultsError:
        kind = f"a {KINDS[self.kind]}" if self.kind is not int else "an integer"
        return CellError(self.name, text, kind, run_id)


class CellError(ResultsError):
    """A cell that is not of its column's kind: which column, and what is wrong, for the reader's one line."""

    def __init__(self, column: str, text: str, kind: str, run_id: str = "?") -> None:
        super().__init__(f"run {run_id}: {column} is {text!r}, not {kind}; fix or remove that row")
        self.column, self.problem = column, f"{text!r} is not {kind}"


def col(
    doc: str,
    *,
    unit: str = "",
    better: Better | None = None,
    compare: Keys | None = None,
    resume: bool = False,
    per_file: bool = False,
    contract: bool = False,
    before: str | None = None,
) -> Any:
    """A field of the row model with what the model says about it; its type is the field's annotation."""
    spec = {"doc": doc, "unit": unit, "better": better, "compare": compare, "resume": resume}
    spec |= {"per_file": per_file, "contract": contract, "before": before}
    return field(default=None, metadata={"column": spec})


def cell(value: Value) -> str:
    """A value as a CSV cell, the one place values become text: "" when not measured (None), never 0;
    booleans as true/false; lists `;`-joined; floats in their shortest exact form (measures are rounded where
    they are taken)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(value)
    return repr(value) if isinstance(value, float) else str(value)


def as_number(text: str, column: str = "value", run_id: str = "?") -> float | None:
    """A cell's number, or None when it is empty or NaN (not measured); a ResultsError naming the run otherwise."""
    if text == "":
        return None
    try:
        parsed = float(text)
    except ValueError:
        raise CellError(column, text, "a number", run_id) from None
    return None if math.isnan(parsed) else parsed


def fits(kind: type, value: Value) -> bool:
    """Whether a producer's value is of the column's kind (None is always allowed: not measured)."""
    if value is None:
        return True
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is list:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, kind)


def columns_of(row_class: type) -> tuple[Column, ...]:
    """The columns of a row dataclass whose fields are made with `col`, in field order, each with its kind taken from
    the field's annotation."""
    hints = typing.get_type_hints(row_class)
    fields = dataclasses.fields(row_class)
    return tuple(Column(f.name, _kind(hints[f.name]), **f.metadata["column"]) for f in fields)


def _kind(annotation: object) -> type:
    """`int | None` -> int; `list[str]` -> list; `str` -> str."""
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    origin = typing.get_origin(annotation)
    return typing.cast(type, origin or annotation)
