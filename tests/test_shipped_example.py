"""The shipped example (results/example/, made once by a real CPU bench: experiments/cpu-presets.yaml) is what its CSV
says: every row has its run folder, and the trace, the request log and the score in it agree with the row's cells.
Nothing is run again: the example is checked, not remade. What ships of it stays small enough (a few hundred KB);
what the commands write beside it (a page, a report: .gitignore) is not shipped, and a new grading of one of its runs
leaves its tracked files as they are."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from bench.measure.request_log import load_request_log
from bench.measure.trace import load_trace
from bench.measure.trace_numbers import trace_numbers
from bench.results.read import read_runs
from bench.results.row import ResultRow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "results" / "example"
CSV = EXAMPLE / "cpu-presets.csv"
ROWS = read_runs(CSV)
SIZE_LIMIT = 600 * 1024


def test_the_example_holds_both_presets_with_runs_enough_to_compare() -> None:
    presets = [row.preset for row in ROWS]
    assert presets.count("part3") >= 4 and presets.count("late") >= 4
    assert {row.flint_serving for row in ROWS} == {"forced_tools"} and {row.servers for row in ROWS} == {"embedded"}


@pytest.mark.parametrize("row", ROWS, ids=[row.run_id for row in ROWS])
def test_each_row_is_what_its_run_folder_holds(row: ResultRow) -> None:
    run_dir = EXAMPLE / "runs" / row.run_id
    events = load_trace(run_dir / "events.jsonl")
    numbers = trace_numbers(events)
    assert numbers.stop_reason == row.stop_reason and numbers.steps == row.steps
    assert numbers.prompt_tokens_reprocessed == row.prompt_tokens_reprocessed
    assert numbers.clearings == row.clearings and numbers.cut_answers == row.cut_answers
    bodies = load_request_log(run_dir)
    assert bodies is not None and bodies.complete
    requests = [e["request"] for e in events if e.get("event") in ("response", "http_error")]
    assert requests == list(range(len(bodies.bodies)))  # one body per request the trace names, in order
    score = json.loads((run_dir / "score.json").read_text())
    assert (score["hidden_passed"], score["hidden_total"]) == (row.hidden_passed, row.hidden_total)
    assert (run_dir / "junit.xml").is_file() and (run_dir / "diff.patch").is_file()


def not_shipped(path: Path) -> bool:
    """What .gitignore keeps out of the example: the commands' outputs written beside it (bench view, report)."""
    patterns = [line for line in (ROOT / ".gitignore").read_text().splitlines() if line.startswith("results/example/")]
    relative = PurePosixPath(path.relative_to(ROOT).as_posix())
    folders = [relative, *relative.parents]
    return any(
        any(folder.match(pattern.rstrip("/")) for folder in folders[1:])
        if pattern.endswith("/")
        else relative.match(pattern)
        for pattern in patterns
    )


def test_what_the_commands_write_beside_the_example_is_not_shipped() -> None:
    for written in ("cpu-presets.html", "cpu-presets-report/report.md", "cpu-presets-report/plots/a.png"):
        assert not_shipped(EXAMPLE / written), written
    assert not not_shipped(CSV) and not not_shipped(EXAMPLE / "runs" / ROWS[0].run_id / "score.json")


def test_the_example_is_small_enough_to_ship() -> None:
    size = sum(path.stat().st_size for path in EXAMPLE.rglob("*") if path.is_file() and not not_shipped(path))
    assert size < SIZE_LIMIT, f"results/example/ holds {size:,} bytes; keep it under {SIZE_LIMIT:,}"


def test_compare_by_preset_gives_a_verdict_between_part3_and_late_from_the_one_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bench.cli import main

    assert main(["compare", str(CSV), "--by", "preset", "--fail-on", "wall_s:25"]) == 0
    out = capsys.readouterr().out
    verdicts = out[out.index("| late vs part3 |") :].split("\n\n")[0].splitlines()[2:]
    assert {line.split(" | ")[0] for line in verdicts} >= {"| completed", "| wall_s", "| prompt_tokens_reprocessed"}
    assert all(line.rstrip(" |").endswith(("within noise", "beyond noise")) for line in verdicts)  # 4 vs 4 can tell


@pytest.mark.parametrize("row", ROWS, ids=[row.run_id for row in ROWS])
def test_the_wall_time_is_the_sum_of_its_parts_with_the_stalls_apart(row: ResultRow) -> None:
    parts = [row.flint_model_s, row.jeff_model_s, row.tools_s, row.server_stall_s, row.own_s]
    assert all(part is not None and part >= 0 for part in parts) and row.wall_s is not None
    assert abs(sum(part for part in parts if part is not None) - row.wall_s) <= 0.01


def git_status(folder: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--", "."], cwd=folder, capture_output=True, text=True
    ).stdout


@pytest.mark.usefixtures("child_processes")
def test_scoring_an_example_run_again_leaves_its_tracked_files_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.cli import main
    from bench.score import score_command

    monkeypatch.setattr(score_command, "default_out", lambda name, checkout: tmp_path / f"scored-{name}")
    row = ROWS[0]
    before = git_status(EXAMPLE)
    assert main(["score", str(EXAMPLE / "runs" / row.run_id), "--sandbox", "local", "--json"]) == 0
    assert git_status(EXAMPLE) == before
    printed = capsys.readouterr()
    assert "tracked by git" in printed.err and json.loads(printed.out)["hidden_passed"] == row.hidden_passed
    saved = json.loads((tmp_path / f"scored-{row.run_id}" / "score.json").read_text())
    assert (saved["hidden_passed"], saved["hidden_total"]) == (row.hidden_passed, row.hidden_total)
