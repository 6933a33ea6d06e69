"""`bench predictions score`: predictions scored against hand-built results, strict validation, and the refusal of
a predictions file committed after the runs began."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import pytest

from bench.analyze.prediction_file import Condition, Prediction, load_predictions
from bench.analyze.predictions import holds, score_file, verdict
from bench.cli import main
from bench.errors import ConfigError, ResultsError
from bench.results.row import ResultRow
from bench.results.schema import COLUMNS

ROOT = Path(__file__).resolve().parents[3]
FIRST_RUN = "2026-11-02T09:00:00+00:00"

PREDICTIONS = """\
- id: part2-some-miss
  says: Somewhere among the part2 runs at 8K a hidden test fails.
  where: {preset: part2, ctx: 8192}
  count: {hidden_passed: {"<": "$hidden_total"}}
  at_least: 1
- id: part3-8k-completes
  says: Two or more part3 runs at 8K complete.
  where: {preset: part3, ctx: 8192}
  count: {completed: true}
  at_least: 2
- id: no-untouched-done
  says: No part3 run says done while leaving the repository as it was.
  where: {preset: part3}
  none: {stop_reason: done, files_changed: 0}
- id: 4k-never-passes
  says: At 4K no run passes every hidden test.
  where: {ctx: 4096}
  none: {hidden_passed: {"==": "$hidden_total"}}
- id: 4k-cuts
  says: Every 4K run has two cut answers or more.
  where: {ctx: 4096}
  all: {cut_answers: {">=": 2}}
- id: 16k
  says: At 16K everything completes.
  where: {ctx: 16384}
  all: {completed: true}
- id: 4k-memory
  says: At 4K Flint stays under 14,000 MiB.
  where: {ctx: 4096}
  all: {peak_gpu_mib_flint: {"<": 14000}}
"""


def run_row(run_id: str, preset: str, ctx: str, **values: str) -> dict[str, str]:
    base = {"run_id": run_id, "started_at": FIRST_RUN, "fixture": "todo_repo", "preset": preset, "ctx": ctx}
    return {**base, "stop_reason": "done", "hidden_passed": "6", "hidden_total": "6", "files_changed": "1", **values}


ROWS = [
    run_row("a4", "part2", "8192", stop_reason="server_error", hidden_passed="3"),
    run_row("a5", "part2", "8192", stop_reason="server_error"),
    run_row("a6", "part2", "8192", stop_reason="context_exhausted", started_at="2026-11-02T09:30:00Z"),
    run_row("b4", "part3", "8192"),
    run_row("b5", "part3", "8192"),
    run_row("b6", "part3", "8192"),
    run_row("c1", "part3", "4096", stop_reason="context_exhausted", hidden_passed="0", cut_answers="8"),
    run_row("c2", "part3", "4096", stop_reason="step_limit", hidden_passed="0", cut_answers="5"),
    run_row("c3", "part3", "4096", stop_reason="context_exhausted", cut_answers="6"),
]


def write_results(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in COLUMNS} for row in rows)
    return path


def git(repo: Path, *args: str, date: str = "2026-11-01T10:00:00+00:00") -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    identity = ["-c", "user.name=Bench Test", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *identity, "-C", str(repo), *args], check=True, capture_output=True, env=env)


def committed(tmp_path: Path, text: str = PREDICTIONS, date: str = "2026-11-01T10:00:00+00:00") -> Path:
    """predictions.yaml committed in a fresh repository at `date`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    path = repo / "predictions.yaml"
    path.write_text(text, encoding="utf-8")
    git(repo, "add", "predictions.yaml")
    git(repo, "commit", "-q", "-m", "predictions", date=date)
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "results.csv", ROWS)


@pytest.mark.usefixtures("child_processes")
def test_each_prediction_gets_its_verdict_and_numbers(
    tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["predictions", "score", str(committed(tmp_path)), str(results)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0:3] == [
        "HIT  part2-some-miss: Somewhere among the part2 runs at 8K a hidden test fails.",
        "    3 runs match preset=part2, ctx=8192; hidden_passed < $hidden_total holds for 1 (needed: at least 1)",
        "    values: hidden_passed 3, 6, 6; hidden_total 6, 6, 6",
    ]
    assert out[3:6] == [
        "HIT  part3-8k-completes: Two or more part3 runs at 8K complete.",
        "    3 runs match preset=part3, ctx=8192; completed == true holds for 3 (needed: at least 2)",
        "    values: completed yes, yes, yes",
    ]
    assert out[6:9] == [
        "HIT  no-untouched-done: No part3 run says done while leaving the repository as it was.",
        "    6 runs match preset=part3; stop_reason == done and files_changed == 0 holds for 0 (needed: none of them)",
        "    values: stop_reason done, done, done, context_exhausted, step_limit, context_exhausted; "
        "files_changed 1, 1, 1, 1, 1, 1",
    ]
    assert out[9:12] == [
        "MISS  4k-never-passes: At 4K no run passes every hidden test.",
        "    3 runs match ctx=4096; hidden_passed == $hidden_total holds for 1 (needed: none of them)",
        "    values: hidden_passed 0, 0, 6; hidden_total 6, 6, 6",
    ]
    assert out[12:15] == [
        "HIT  4k-cuts: Every 4K run has two cut answers or more.",
        "    3 runs match ctx=4096; cut_answers >= 2 holds for 3 (needed: all of them)",
        "    values: cut_answers 8, 5, 6",
    ]
    assert out[15:17] == ["NOT SCORABLE  16k: At 16K everything completes.", "    no run matches ctx=16384"]
    assert out[17:20] == [
        "NOT SCORABLE  4k-memory: At 4K Flint stays under 14,000 MiB.",
        "    3 runs match ctx=4096; peak_gpu_mib_flint < 14000 holds for 0, unknown for 3 (not measured) "
        "(needed: all of them)",
        "    values: peak_gpu_mib_flint n/a, n/a, n/a",
    ]
    assert out[-1] == "4 hit, 1 miss, 2 not scorable (of 7 predictions)"


def prediction(test: str = "count", bound: str | None = "at_least", target: int = 2) -> Prediction:
    return Prediction("p", "says", {}, test, [Condition("completed", "==", True)], bound, target)


@pytest.mark.parametrize(
    ("test", "bound", "target", "counts", "expected"),
    [
        ("count", "at_least", 2, (3, 2, 0), "HIT"),
        ("count", "at_least", 2, (3, 1, 0), "MISS"),
        ("count", "at_least", 2, (3, 1, 1), "NOT SCORABLE"),  # the unknown run could make it either
        ("count", "at_least", 2, (3, 2, 1), "HIT"),  # already there, whatever the unknown run did
        ("count", "at_most", 1, (3, 1, 0), "HIT"),
        ("count", "at_most", 1, (3, 1, 1), "NOT SCORABLE"),
        ("count", "at_most", 1, (3, 2, 0), "MISS"),
        ("count", "exactly", 2, (3, 2, 0), "HIT"),
        ("count", "exactly", 2, (3, 2, 1), "NOT SCORABLE"),
        ("count", "exactly", 2, (3, 3, 0), "MISS"),
        ("count", "exactly", 2, (3, 0, 1), "MISS"),
        ("all", None, 0, (3, 3, 0), "HIT"),
        ("all", None, 0, (3, 2, 1), "NOT SCORABLE"),
        ("all", None, 0, (3, 1, 1), "MISS"),
        ("none", None, 0, (3, 0, 0), "HIT"),
        ("none", None, 0, (3, 0, 1), "NOT SCORABLE"),
        ("none", None, 0, (3, 1, 1), "MISS"),
        ("all", None, 0, (0, 0, 0), "NOT SCORABLE"),
    ],
)
def test_verdicts_never_guess_about_unmeasured_runs(
    test: str, bound: str | None, target: int, counts: tuple[int, int, int], expected: str
) -> None:
    assert verdict(prediction(test, bound, target), *counts) == expected


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        (Condition("ctx", "==", "8192"), {"ctx": "8192.0"}, True),  # numbers compare as numbers
        (Condition("preset", "!=", "part2"), {"preset": "part3"}, True),
        (Condition("wall_s", "<", "100"), {"wall_s": "99.5"}, True),
        (Condition("wall_s", ">=", "100"), {"wall_s": ""}, None),  # not measured is not 0
        (Condition("hidden_passed", "==", "$hidden_total"), {"hidden_passed": "6", "hidden_total": ""}, None),
        (Condition("peak_gpu_mib_flint", "==", ""), {"peak_gpu_mib_flint": ""}, True),  # asks: was it measured?
        (Condition("peak_gpu_mib_flint", "!=", ""), {"peak_gpu_mib_flint": ""}, False),
        (
            Condition("failure_labels", "contains", "cut_answers"),
            {"failure_labels": "idle_execution;cut_answers"},
            True,
        ),
        (Condition("failure_labels", "contains", "cut_answers"), {"failure_labels": ""}, False),
        (Condition("completed", "==", True), {"stop_reason": "done", "hidden_passed": "", "hidden_total": "6"}, None),
        (Condition("completed", "==", False), {"stop_reason": "step_limit", "hidden_passed": ""}, True),
        (Condition("completed", "==", True), {"stop_reason": ""}, None),
    ],
)
def test_conditions_on_one_row(condition: Condition, values: dict[str, str], expected: bool | None) -> None:
    assert holds(condition, ResultRow.from_cells({"run_id": "r", **values})) is expected


def test_an_ordering_on_a_column_that_is_not_a_number_names_the_run() -> None:
    with pytest.raises(ResultsError, match="run r9: stop_reason is 'done', not a number"):
        holds(Condition("stop_reason", ">", "1"), ResultRow.from_cells({"run_id": "r9", "stop_reason": "done"}))


GOOD = "  says: s\n  where: {ctx: 4096}\n  all: {completed: true}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- id: a\n" + GOOD + "  colour: red\n", r"entry 1 \(a\): unknown key colour"),
        ("- id: a\n  where: {ctx: 4096}\n  all: {completed: true}\n", "says is missing"),
        (
            "- id: a\n  says: ' '\n  all: {completed: true}\n",
            "says = ' ' is not allowed: string should have at least 1",
        ),
        ("- id: a\n  says: s\n", "give exactly one test"),
        ("- id: a\n" + GOOD + "  none: {completed: false}\n", "give exactly one test"),
        ("- id: a\n  says: s\n  count: {completed: true}\n", "count needs exactly one of at_least"),
        (
            "- id: a\n  says: s\n  count: {completed: true}\n  at_least: -1\n",
            "at_least = -1 is not allowed: input should be greater than",
        ),
        ("- id: a\n" + GOOD + "  at_most: 1\n", "at_most goes with count, not with all"),
        ("- id: a\n  says: s\n  where: {colour: red}\n  all: {completed: true}\n", "unknown column 'colour'"),
        ("- id: a\n  says: s\n  all: {completed: yes please}\n", "completed must be true or false"),
        ("- id: a\n  says: s\n  all: {wall_s: {'~': 3}}\n", "unknown operator '~'"),
        ("- id: a\n  says: s\n  all: {wall_s: {'<': fast}}\n", "ordering needs a number or a \\$column"),
        ("- id: a\n  says: s\n  all: {wall_s: {'<': $speed}}\n", "unknown column 'speed'"),
        ("- id: a\n  says: s\n  all: {}\n", "the test needs a row predicate"),
        ("- id: a\n  says: s\n  where: {ctx: [[1]]}\n  all: {completed: true}\n", "where ctx: give a value"),
        ("- just a sentence\n", "entry 1: must be a mapping"),
        ("id: a\nsays: s\n", "must hold a non-empty YAML list"),
        ("- id: a\n  says: [unclosed\n", "is not valid YAML"),
        ("- id: a\n" + GOOD + "- id: a\n" + GOOD, "id 'a' is used more than once"),
    ],
)
def test_bad_entries_are_refused_with_a_clear_reason(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "predictions.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_predictions(path)


def test_every_bad_entry_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "predictions.yaml"
    path.write_text("- id: a\n" + GOOD + "- id: b\n  says: s\n- id: c\n" + GOOD + "  x: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_predictions(path)
    assert "entry 2 (b): give exactly one test" in str(error.value)
    assert "entry 3 (c): unknown key x" in str(error.value)
    assert "entry 1" not in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.usefixtures("child_processes")
def test_predictions_committed_after_the_first_run_are_refused(tmp_path: Path, results: Path) -> None:
    path = committed(tmp_path, date="2026-11-02T09:15:00+00:00")  # after a4..a5 started, before a6
    with pytest.raises(
        ResultsError, match=r"after the first run started .*commit predictions before running the bench"
    ):
        score_file(path, results)


@pytest.mark.usefixtures("child_processes")
def test_a_commit_at_the_same_moment_as_the_first_run_is_accepted(tmp_path: Path, results: Path) -> None:
    assert len(score_file(committed(tmp_path, date=FIRST_RUN), results)) == 7


@pytest.mark.usefixtures("child_processes")
def test_uncommitted_changes_are_refused(tmp_path: Path, results: Path) -> None:
    path = committed(tmp_path)
    path.write_text(PREDICTIONS + "# added after the runs\n", encoding="utf-8")
    with pytest.raises(ResultsError, match="has uncommitted changes"):
        score_file(path, results)


@pytest.mark.usefixtures("child_processes")
def test_an_untracked_file_is_refused(tmp_path: Path, results: Path) -> None:
    path = committed(tmp_path).with_name("later.yaml")
    path.write_text(PREDICTIONS, encoding="utf-8")
    with pytest.raises(ResultsError, match="is not tracked by git"):
        score_file(path, results)


@pytest.mark.usefixtures("child_processes")
def test_a_file_outside_git_is_refused_through_the_cli(
    tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loose.yaml"
    path.write_text(PREDICTIONS, encoding="utf-8")
    assert main(["predictions", "score", str(path), str(results)]) == 2
    assert "is not inside a git repository; commit predictions before running the bench" in capsys.readouterr().err


@pytest.mark.usefixtures("child_processes")
def test_results_without_start_times_cannot_date_predictions(tmp_path: Path) -> None:
    results = write_results(tmp_path / "results.csv", [run_row("x", "part3", "8192", started_at="")])
    with pytest.raises(ResultsError, match="no run in the results has a started_at time"):
        score_file(committed(tmp_path), results)


def test_the_example_predictions_file_is_valid() -> None:
    predictions = load_predictions(ROOT / "predictions.yaml")
    assert len(predictions) >= 5
    assert {p.test for p in predictions} == {"count", "all", "none"}
