"""`python -m bench predictions score predictions.yaml RESULTS.csv`: hit or miss for each prediction written before
a bench, with the numbers behind it. The file format is in bench.analyze.prediction_file.

A value that was not measured (empty) makes its condition unknown, never 0; a prediction whose outcome depends on
unknown rows is "not scorable", as is one that no row matches.
The file must be committed, unchanged since, and its last commit must be no later than the first run's start.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench.analyze.prediction_file import COMPARISONS, ORDERING, Condition, Prediction, as_float, load_predictions
from bench.errors import ResultsError
from bench.json_documents import SCHEMA_VERSION
from bench.provenance import git
from bench.results.column import as_number
from bench.results.read import is_completed, read_runs
from bench.results.row import ResultRow

HIT, MISS, NOT_SCORABLE = "HIT", "MISS", "NOT SCORABLE"


@dataclass(frozen=True)
class Verdict:
    prediction: Prediction
    verdict: str
    matching: int
    satisfied: int
    unknown: int
    values: str  # the values behind the verdict, per matching row


def holds(condition: Condition, row: ResultRow) -> bool | None:
    """True, False, or None when a value it needs was not measured."""
    if condition.column == "completed":
        completed = _completed(row)
        return None if completed is None else completed == condition.value
    left, value = row.text(condition.column), str(condition.value)
    right = row.text(value[1:]) if value.startswith("$") else value
    if condition.op == "contains":
        return right in [item.strip() for item in left.split(";")]
    if value == "":  # a literal "" asks whether the column was measured at all
        return COMPARISONS[condition.op](left, "")
    if left == "" or right == "":
        return None
    if condition.op in ORDERING:
        a, b = row.number(condition.column), as_number(right, value, row.run_id or "?")
    else:
        a, b = as_float(left), as_float(right)
        if a is None or b is None:  # not both numbers: compare the text
            return COMPARISONS[condition.op](left, right)
    return None if a is None or b is None else COMPARISONS[condition.op](a, b)


def _completed(row: ResultRow) -> bool | None:
    """Whether the run completed; None when the stop reason, or the hidden counts of a `done` run, are missing."""
    if not row.stop_reason:
        return None
    if row.stop_reason == "done" and None in (row.hidden_passed, row.hidden_total):
        return None
    return is_completed(row)


def satisfies(conditions: list[Condition], row: ResultRow) -> bool | None:
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


def score(prediction: Prediction, rows: list[ResultRow]) -> Verdict:
    matching = [row for row in rows if all(_matches(row.text(c), v) for c, v in prediction.where.items())]
    results = [satisfies(prediction.conditions, row) for row in matching]
    satisfied, unknown = results.count(True), results.count(None)
    return Verdict(
        prediction=prediction,
        verdict=verdict(prediction, len(matching), satisfied, unknown),
        matching=len(matching),
        satisfied=satisfied,
        unknown=unknown,
        values=_values(prediction, matching),
    )


def _matches(cell: str, wanted: list[str]) -> bool:
    cell_number = as_float(cell) if cell else None
    return any(cell == w or (cell_number is not None and cell_number == as_float(w)) for w in wanted)


def _values(prediction: Prediction, rows: list[ResultRow]) -> str:
    """`hidden_passed 3, 6, 6`: each column the predicate reads, per matching row."""
    columns = list(dict.fromkeys(c.column for c in prediction.conditions))
    columns += [str(c.value)[1:] for c in prediction.conditions if str(c.value).startswith("$")]
    parts = []
    for column in dict.fromkeys(columns):
        if column == "completed":
            cells = [{None: "n/a", True: "yes", False: "no"}[_completed(row)] for row in rows]
        else:
            cells = [row.text(column) or "n/a" for row in rows]
        parts.append(f"{column} {', '.join(cells)}")
    return "; ".join(parts)


def describe(result: Verdict) -> list[str]:
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


def check_committed_before(path: Path, rows: list[ResultRow]) -> None:
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
        return git(path.parent, *args)
    except FileNotFoundError:
        raise ResultsError(
            "git is not installed; it is needed to check that predictions came before the runs"
        ) from None


def earliest_start(rows: list[ResultRow]) -> datetime:
    starts = [parse_time(row.started_at, f"run {row.run_id} started_at") for row in rows if row.started_at]
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


def score_file(predictions_file: Path, results_file: Path, skip_bad_rows: bool = False) -> list[Verdict]:
    rows = read_runs(results_file, skip_bad_rows)
    check_committed_before(predictions_file, rows)
    return [score(prediction, rows) for prediction in load_predictions(predictions_file)]


def command(predictions_file: Path, results_file: Path, skip_bad_rows: bool = False, as_json: bool = False) -> int:
    """`bench predictions score predictions.yaml RESULTS.csv [--json]` (bench/cli/predictions.py)."""
    results = score_file(predictions_file, results_file, skip_bad_rows)
    verdicts = [r.verdict for r in results]
    if as_json:
        print(json.dumps(document(predictions_file, results_file, results), indent=2, ensure_ascii=False))
        return 0
    for result in results:
        print("\n".join(describe(result)))
    tally = f"{verdicts.count(HIT)} hit, {verdicts.count(MISS)} miss, {verdicts.count(NOT_SCORABLE)} not scorable"
    print(f"\n{tally} (of {len(results)} predictions)")
    return 0


def document(predictions_file: Path, results_file: Path, results: list[Verdict]) -> dict[str, Any]:
    """The verdicts as bench.json_documents.PREDICTIONS_SCORE describes them."""
    verdicts = [r.verdict for r in results]
    found = [
        {
            "id": r.prediction.id,
            "says": r.prediction.says,
            "verdict": r.verdict,
            "matching": r.matching,
            "satisfied": r.satisfied,
            "unknown": r.unknown,
            "values": r.values,
            "lines": describe(r),
        }
        for r in results
    ]
    tally = {"hit": verdicts.count(HIT), "miss": verdicts.count(MISS), "not_scorable": verdicts.count(NOT_SCORABLE)}
    head = {"command": "predictions score", "schema_version": SCHEMA_VERSION}
    return {
        **head,
        "predictions_file": str(predictions_file),
        "results_file": str(results_file),
        "predictions": found,
        "tally": tally,
    }
