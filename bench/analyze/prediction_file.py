"""predictions.yaml: the file a bench's predictions are written in, read and validated into Prediction objects.

The file is a YAML list. Each entry:

    - id: part3-8k-completes            # unique name
      says: The part3 agent at 8K completes the task in two runs or more.
      where: {preset: part3, ctx: 8192} # column -> value or list of values; all must match (optional: all rows)
      count: {completed: true}          # a row predicate (below), then exactly one bound:
      at_least: 2                       #   at_least | at_most | exactly: N
    # or instead of count + bound:  all: {PREDICATE}  (every matching row)  |  none: {PREDICATE}  (no matching row)

A row predicate maps columns to conditions, all of which must hold:
    completed: true | false             stopped with done and every hidden test passed
    COLUMN: VALUE                       equal (numbers compare as numbers: 8192 == "8192.0")
    COLUMN: {OP: VALUE, ...}            OP in ==, !=, <, <=, >, >=, contains (an item of a ;-list such as
                                        failure_labels); VALUE "$other_column" compares with another column

Predictions are data: nothing in the file is run. bench.analyze.predictions scores them against a results CSV.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator, model_validator

from bench.errors import ConfigError
from bench.results.schema import COLUMNS
from bench.yaml_file import describe, read_yaml

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
ORDERING = {"<", "<=", ">", ">="}
BOUNDS = ("at_least", "at_most", "exactly")
TESTS = ("count", "all", "none")
ENTRY_KEYS = ("id", "says", "where", *TESTS, *BOUNDS)


@dataclass(frozen=True)
class Condition:
    column: str  # a results column, or "completed"
    op: str
    value: str | bool  # a literal, or "$column" for another column of the same row

    def __str__(self) -> str:
        return f"{self.column} {self.op} {str(self.value).lower() if isinstance(self.value, bool) else self.value}"


@dataclass(frozen=True)
class Prediction:
    id: str
    says: str
    where: dict[str, list[str]]
    test: str  # count | all | none
    conditions: list[Condition]
    bound: str | None = None  # with count: at_least | at_most | exactly
    target: int = 0


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Bound = Annotated[int, Field(ge=0)]


class Entry(BaseModel):
    """One entry of predictions.yaml, as written (the module's docstring shows the shape); an unknown key is an
    error."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, arbitrary_types_allowed=True)

    id: Text
    says: Text
    where: dict[str, list[str]] = {}
    count: list[Condition] | None = None
    all: list[Condition] | None = None
    none: list[Condition] | None = None
    at_least: Bound | None = None
    at_most: Bound | None = None
    exactly: Bound | None = None

    @field_validator("where", mode="before")
    @classmethod
    def _columns_and_values(cls, where: Any) -> dict[str, list[str]]:
        return _where(where)

    @field_validator("count", "all", "none", mode="before")
    @classmethod
    def _row_predicate(cls, predicate: Any) -> list[Condition]:
        return _predicate(predicate)

    @model_validator(mode="after")
    def _one_test_and_its_bound(self) -> Entry:
        tests = [key for key in TESTS if getattr(self, key) is not None]
        if len(tests) != 1:
            raise ValueError("give exactly one test: count (with at_least, at_most or exactly), all, or none")
        bounds = [key for key in BOUNDS if getattr(self, key) is not None]
        if tests[0] != "count" and bounds:
            raise ValueError(f"{bounds[0]} goes with count, not with {tests[0]}")
        if tests[0] == "count" and len(bounds) != 1:
            raise ValueError("count needs exactly one of at_least, at_most, exactly")
        return self

    def prediction(self) -> Prediction:
        (test,) = (key for key in TESTS if getattr(self, key) is not None)
        bound = next((key for key in BOUNDS if getattr(self, key) is not None), None)
        target = getattr(self, bound) if bound else 0
        return Prediction(
            id=self.id,
            says=self.says,
            where=self.where,
            test=test,
            conditions=getattr(self, test),
            bound=bound,
            target=target,
        )


def load_predictions(path: Path) -> list[Prediction]:
    """Every entry validated; all problems are reported at once, one clause per bad entry."""
    data = read_yaml(path, "predictions file")
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{path} must hold a non-empty YAML list of predictions (see docs/compare.md)")
    predictions, problems = [], []
    for index, entry in enumerate(data, start=1):
        try:
            predictions.append(parse_entry(entry))
        except ValueError as e:
            name = f" ({entry['id']})" if isinstance(entry, dict) and isinstance(entry.get("id"), str) else ""
            problems.append(f"entry {index}{name}: {e}")
    ids = [p.id for p in predictions]
    problems += [f"id {i!r} is used more than once" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return predictions


def parse_entry(entry: Any) -> Prediction:
    """One entry as a Prediction; ValueError naming the key and what is allowed, in one line."""
    if not isinstance(entry, dict):
        raise ValueError("must be a mapping with id, says, where and a test")
    unknown = [str(key) for key in entry if key not in ENTRY_KEYS]
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)}; allowed: {', '.join(ENTRY_KEYS)}")
    try:
        return Entry.model_validate(entry).prediction()
    except ValidationError as e:
        raise ValueError(describe(e)) from None


def _where(where: Any) -> dict[str, list[str]]:
    if not isinstance(where, dict):
        raise ValueError("where must map columns to a value or a list of values")
    parsed = {}
    for column, value in where.items():
        _check_column(column)
        values = value if isinstance(value, list) else [value]
        if not values or not all(_is_scalar(v) for v in values):
            raise ValueError(f"where {column}: give a value or a non-empty list of values")
        parsed[column] = [_text(v) for v in values]
    return parsed


def _predicate(predicate: Any) -> list[Condition]:
    if not isinstance(predicate, dict) or not predicate:
        raise ValueError(
            "the test needs a row predicate: a mapping such as {completed: true} or {cut_answers: {'>=': 2}}"
        )
    conditions = []
    for column, spec in predicate.items():
        if column == "completed":
            if not isinstance(spec, bool):
                raise ValueError("completed must be true or false")
            conditions.append(Condition("completed", "==", spec))
            continue
        _check_column(column)
        specs = spec if isinstance(spec, dict) else {"==": spec}
        conditions += [_condition(column, op, value) for op, value in specs.items()]
    return conditions


def _condition(column: str, op: Any, value: Any) -> Condition:
    if op not in COMPARISONS and op != "contains":
        raise ValueError(f"{column}: unknown operator {op!r}; use ==, !=, <, <=, >, >= or contains")
    if not _is_scalar(value):
        raise ValueError(f"{column} {op}: the value must be a single number or string")
    text = _text(value)
    if text.startswith("$"):
        _check_column(text[1:])
    elif op in ORDERING and as_float(text) is None:
        raise ValueError(f"{column} {op} {text!r}: ordering needs a number or a $column")
    elif op == "contains" and not text:
        raise ValueError(f"{column} contains: give the item to look for")
    return Condition(column, op, text)


def _check_column(column: Any) -> None:
    if column not in COLUMNS:
        raise ValueError(f"unknown column {column!r}; see docs/results.md")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _text(value: str | int | float) -> str:
    return value.strip() if isinstance(value, str) else str(value)


def as_float(text: str) -> float | None:
    """The text as a number, or None when it is not one."""
    try:
        return float(text)
    except ValueError:
        return None
