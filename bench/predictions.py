"""`python -m bench predictions score predictions.yaml RESULTS.csv`: hit or miss for each prediction written before
a bench, with the numbers behind it.

A predictions file is a YAML list. Each entry:

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

A value that was not measured (empty) makes its condition unknown, never 0; a prediction whose outcome depends on
unknown rows is "not scorable", as is one that no row matches. Predictions are data: nothing in the file is run.
The file must be committed, unchanged since, and its last commit must be no later than the first run's start.
"""

from __future__ import annotations

import argparse
import operator
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from bench.errors import ConfigError, ResultsError
from bench.results import COLUMNS
from bench.table import Row, is_completed, number, read_runs

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
HIT, MISS, NOT_SCORABLE = "HIT", "MISS", "NOT SCORABLE"


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


@dataclass(frozen=True)
class Score:
    prediction: Prediction
    verdict: str
    matching: int
    satisfied: int
    unknown: int
    values: str  # the values behind the verdict, per matching row


# ---- reading and validating -------------------------------------------------------------------------------------


def load_predictions(path: Path) -> list[Prediction]:
    """Every entry validated; all problems are reported at once, one clause per bad entry."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"cannot read predictions file {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML ({str(e).splitlines()[0]}); fix the syntax") from e
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
    if not isinstance(entry, dict):
        raise ValueError("must be a mapping with id, says, where and a test")
    unknown = [str(key) for key in entry if key not in ENTRY_KEYS]
    if unknown:
        raise ValueError(f"unknown key {', '.join(unknown)}; allowed: {', '.join(ENTRY_KEYS)}")
    for key in ("id", "says"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ValueError(f"{key} must be a non-empty string")
    tests = [key for key in TESTS if key in entry]
    if len(tests) != 1:
        raise ValueError("give exactly one test: count (with at_least, at_most or exactly), all, or none")
    bound, target = _bound(entry, tests[0])
    return Prediction(
        entry["id"],
        entry["says"].strip(),
        _where(entry.get("where", {})),
        tests[0],
        _predicate(entry[tests[0]]),
        bound,
        target,
    )


def _bound(entry: dict[str, Any], test: str) -> tuple[str | None, int]:
    bounds = [key for key in BOUNDS if key in entry]
    if test != "count":
        if bounds:
            raise ValueError(f"{bounds[0]} goes with count, not with {test}")
        return None, 0
    if len(bounds) != 1:
        raise ValueError("count needs exactly one of at_least, at_most, exactly")
    target = entry[bounds[0]]
    if not isinstance(target, int) or isinstance(target, bool) or target < 0:
        raise ValueError(f"{bounds[0]} must be a whole number >= 0, not {target!r}")
    return bounds[0], target


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
    elif op in ORDERING and _float(text) is None:
        raise ValueError(f"{column} {op} {text!r}: ordering needs a number or a $column")
    elif op == "contains" and not text:
        raise ValueError(f"{column} contains: give the item to look for")
    return Condition(column, op, text)


def _check_column(column: Any) -> None:
    if column not in COLUMNS:
        raise ValueError(f"unknown column {column!r}; see bench/results.py COLUMNS")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _text(value: str | int | float) -> str:
    return value.strip() if isinstance(value, str) else str(value)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# ---- scoring ----------------------------------------------------------------------------------------------------


def holds(condition: Condition, row: Row) -> bool | None:
    """True, False, or None when a value it needs was not measured."""
    if condition.column == "completed":
        completed = _completed(row)
        return None if completed is None else completed == condition.value
    left, value = row.get(condition.column, ""), str(condition.value)
    right = row.get(value[1:], "") if value.startswith("$") else value
    if condition.op == "contains":
        return right in [item.strip() for item in left.split(";")]
    if value == "":  # a literal "" asks whether the column was measured at all
        return COMPARISONS[condition.op](left, "")
    if left == "" or right == "":
        return None
    if condition.op in ORDERING:
        a, b = number(left, condition.column, row.get("run_id", "?")), number(right, value, row.get("run_id", "?"))
    else:
        a, b = _float(left), _float(right)
        if a is None or b is None:  # not both numbers: compare the text
            return COMPARISONS[condition.op](left, right)
    return None if a is None or b is None else COMPARISONS[condition.op](a, b)


def _completed(row: Row) -> bool | None:
    """Whether the run completed; None when the stop reason, or the hidden counts of a `done` run, are missing."""
    if not row.get("stop_reason"):
        return None
    if row["stop_reason"] == "done" and "" in (row.get("hidden_passed", ""), row.get("hidden_total", "")):
        return None
    return is_completed(row)


def satisfies(conditions: list[Condition], row: Row) -> bool | None:
    results = [holds(condition, row) for condition in conditions]
    if False in results:
        return False
    return None if None in results else True


def verdict(prediction: Prediction, matching: int, satisfied: int, unknown: int) -> str:
    """Three-valued: a HIT or MISS only when no way of filling in the unknown rows could change it."""
    if matching == 0:
        return NOT_SCORABLE
    n, s, u = prediction.target, satisfied, unknown
    hit, miss = {
        "all": (s == matching, matching - s - u > 0),
        "none": (s == 0 and u == 0, s > 0),
        "at_least": (s >= n, s + u < n),
        "at_most": (s + u <= n, s > n),
        "exactly": (s == n and u == 0, s > n or s + u < n),
    }[prediction.bound or prediction.test]
    return HIT if hit else MISS if miss else NOT_SCORABLE


def score(prediction: Prediction, rows: list[Row]) -> Score:
    matching = [row for row in rows if all(_matches(row.get(c, ""), v) for c, v in prediction.where.items())]
    results = [satisfies(prediction.conditions, row) for row in matching]
    satisfied, unknown = results.count(True), results.count(None)
    return Score(
        prediction,
        verdict(prediction, len(matching), satisfied, unknown),
        len(matching),
        satisfied,
        unknown,
        _values(prediction, matching),
    )


def _matches(cell: str, wanted: list[str]) -> bool:
    cell_number = _float(cell) if cell else None
    return any(cell == w or (cell_number is not None and cell_number == _float(w)) for w in wanted)


def _values(prediction: Prediction, rows: list[Row]) -> str:
    """`hidden_passed 3, 6, 6`: each column the predicate reads, per matching row."""
    columns = list(dict.fromkeys(c.column for c in prediction.conditions))
    columns += [str(c.value)[1:] for c in prediction.conditions if str(c.value).startswith("$")]
    parts = []
    for column in dict.fromkeys(columns):
        if column == "completed":
            cells = [{None: "n/a", True: "yes", False: "no"}[_completed(row)] for row in rows]
        else:
            cells = [row.get(column, "") or "n/a" for row in rows]
        parts.append(f"{column} {', '.join(cells)}")
    return "; ".join(parts)


def describe(result: Score) -> list[str]:
    """The verdict and sentence, then the numbers behind it."""
    p = result.prediction
    where = ", ".join(f"{c}={'|'.join(v)}" for c, v in p.where.items()) or "all runs"
    head = f"{result.verdict}  {p.id}: {p.says}"
    if not result.matching:
        return [head, f"    no run matches {where}"]
    test = " and ".join(str(c) for c in p.conditions)
    needed = f"{p.bound.replace('_', ' ')} {p.target}" if p.bound else f"{p.test} of them"
    unknown = f", unknown for {result.unknown} (not measured)" if result.unknown else ""
    counts = f"{result.matching} runs match {where}; {test} holds for {result.satisfied}{unknown} (needed: {needed})"
    return [head, f"    {counts}", f"    values: {result.values}"]


# ---- predictions must come first --------------------------------------------------------------------------------


def check_committed_before(path: Path, rows: list[Row]) -> None:
    """Refuse a predictions file that is not committed as is, or whose last commit is later than the first run."""
    first_run = earliest_start(rows)
    fix = "commit predictions before running the bench"
    if _git(path, "rev-parse", "--is-inside-work-tree").returncode != 0:
        raise ResultsError(f"{path} is not inside a git repository; {fix}")
    if _git(path, "ls-files", "--error-unmatch", "--", path.name).returncode != 0:
        raise ResultsError(f"{path} is not tracked by git; {fix}")
    if _git(path, "status", "--porcelain", "--", path.name).stdout.strip():
        raise ResultsError(f"{path} has uncommitted changes, so it may have been written after the runs; {fix}")
    committed_text = _git(path, "log", "-1", "--format=%cI", "--", path.name).stdout.strip()
    if not committed_text:
        raise ResultsError(f"{path} has never been committed; {fix}")
    committed = parse_time(committed_text, "the last commit")
    if committed > first_run:
        raise ResultsError(
            f"{path} was last committed at {committed.isoformat()}, after the first run started "
            f"({first_run.isoformat()}); {fix}"
        )


def _git(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise ResultsError(
            "git is not installed; it is needed to check that predictions came before the runs"
        ) from None


def earliest_start(rows: list[Row]) -> datetime:
    starts = [parse_time(row["started_at"], f"run {row['run_id']} started_at") for row in rows if row.get("started_at")]
    if not starts:
        raise ResultsError("no run in the results has a started_at time, so the predictions cannot be dated against it")
    return min(starts)


def parse_time(text: str, what: str) -> datetime:
    """ISO 8601; a time without a zone is taken as UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ResultsError(f"{what} is {text!r}, not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def score_file(predictions_file: Path, results_file: Path) -> list[Score]:
    rows = read_runs(results_file)
    check_committed_before(predictions_file, rows)
    return [score(prediction, rows) for prediction in load_predictions(predictions_file)]


def command(args: argparse.Namespace) -> int:
    results = score_file(Path(args.predictions_file), Path(args.results_file))
    for result in results:
        print("\n".join(describe(result)))
    verdicts = [r.verdict for r in results]
    tally = f"{verdicts.count(HIT)} hit, {verdicts.count(MISS)} miss, {verdicts.count(NOT_SCORABLE)} not scorable"
    print(f"\n{tally} (of {len(results)} predictions)")
    return 0
