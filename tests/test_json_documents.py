"""Every `--json` document parses and is valid against its schema (bench/json_documents.py, docs/json.md): each
command run the way a script runs it, its stdout validated with jsonschema (draft 2020-12)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bench.cli import main
from bench.json_documents import SCHEMAS
from bench.results.schema import COLUMNS

Capture = pytest.CaptureFixture[str]


def row(run_id: str, **values: str) -> dict[str, str]:
    base = {
        "run_id": run_id,
        "started_at": "2026-11-30T02:00:00+00:00",
        "git_sha": "a" * 40,
        "fixture": "todo_repo",
        "preset": "part3",
        "ctx": "4096",
        "flint_model": "f.gguf",
        "stop_reason": "done",
        "hidden_passed": "6",
        "hidden_total": "6",
        "wall_s": "20.5",
        "prompt_tokens_reprocessed": "1000",
        "reprocessed_check": "ok",
    }
    return {**base, **values}


def write(path: Path, rows: list[dict[str, str]]) -> str:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return str(path)


def printed(capsys: Capture, command: str, args: list[str], status: int = 0) -> dict[str, Any]:
    assert main([*command.split(), *args, "--json"]) == status
    found = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[command])
    jsonschema.Draft202012Validator(SCHEMAS[command]).validate(found)
    assert found["command"] == command
    return found


def walls(prefix: str, values: list[float], **cells: str) -> list[dict[str, str]]:
    return [row(f"{prefix}{i}", wall_s=str(v), **cells) for i, v in enumerate(values)]


def test_compare(tmp_path: Path, capsys: Capture) -> None:
    old = write(tmp_path / "old.csv", walls("a", [100, 101, 99, 102, 98]))
    new = write(tmp_path / "new.csv", [*walls("b", [130, 131, 129, 132, 128]), row("x", stop_reason="infra_error")])
    found = printed(capsys, "compare", [old, new, "--fail-on", "wall_s:10", "--fail-on", "completed"], status=1)
    assert found["tripped"] and [g["outcome"] for g in found["gates"]] == ["FAIL", "ok"]
    (group,) = found["groups"]
    wall = next(c for c in group["changes"] if c["metric"] == "wall_s")
    assert wall["p"] == pytest.approx(0.0079, abs=1e-4) and wall["interval_low"] > 0
    assert group["sides"][1]["infra_error_runs"] == 1 and group["sides"][1]["metrics"]["wall_s"]["median"] == 130
    assert found["gates"][1]["power"]["gate_catches"] is not None


def test_compare_by_a_setting_and_inputs_that_differ(tmp_path: Path, capsys: Capture) -> None:
    one = write(tmp_path / "one.csv", [*walls("a", [100, 101]), *walls("b", [70], preset="late")])
    found = printed(capsys, "compare", [one, "--by", "preset"])
    assert found["by"] == "preset" and found["groups"][0]["sides"][1]["label"] == "late"
    steps = write(tmp_path / "steps.csv", walls("c", [100, 101], max_steps="30"))
    found = printed(capsys, "compare", [one, steps, "--fail-on", "wall_s"])
    differing = [g for g in found["groups"] if g["inputs_differ"]]
    assert differing and differing[0]["inputs_differ"] == ["max_steps"] and "not gated" in differing[0]["not_gated"]
    assert any(g["not_compared"] for g in found["groups"])  # late: in one file only


def test_history(tmp_path: Path, capsys: Capture) -> None:
    files = [
        write(
            tmp_path / f"night-{i}.csv", walls(f"n{i}-", [100 + i, 101 + i], started_at=f"2026-11-{10 + i}T02:00:00Z")
        )
        for i in range(3)
    ]
    found = printed(capsys, "history", [*files, "--out-dir", str(tmp_path / "history")])
    (config,) = found["configurations"]
    assert [night["values"]["wall_s"] for night in config["nights"]] == [100.5, 101.5, 102.5]
    assert config["too_few_nights"] and Path(found["report"]).is_file()


def test_report(tmp_path: Path, capsys: Capture) -> None:
    results = write(tmp_path / "r.csv", [*walls("a", [10, 12]), *walls("b", [20], preset="late", hidden_passed="2")])
    found = printed(capsys, "report", [results, "--out-dir", str(tmp_path / "report")])
    assert [g["completed"] for g in found["groups"]] == [2, 0]
    assert (
        found["groups"][0]["runs_without_trace"] == 2 and (tmp_path / "report" / found["groups"][0]["figure"]).is_file()
    )


def test_fixtures_check(tmp_path: Path, capsys: Capture) -> None:
    (tmp_path / "fixtures" / "broken").mkdir(parents=True)  # no fixture.yaml: found at once, no test run
    (tmp_path / "hidden_tests").mkdir()
    found = printed(capsys, "fixtures check", ["--fixtures-root", str(tmp_path)], status=1)
    (fixture,) = found["fixtures"]
    assert not found["ok"] and fixture["name"] == "broken" and fixture["problems"]


@pytest.mark.usefixtures("child_processes")
def test_predictions_score(tmp_path: Path, capsys: Capture) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    predictions = repo / "predictions.yaml"
    predictions.write_text("- id: p1\n  says: part3 completes\n  where: {preset: part3}\n  all: {completed: true}\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-11-01T10:00:00Z", "GIT_COMMITTER_DATE": "2026-11-01T10:00:00Z"}
    identity = ["-c", "user.name=Bench Test", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]
    for step in (["init", "-q"], ["add", "predictions.yaml"], ["commit", "-q", "-m", "predictions"]):
        subprocess.run(["git", *identity, "-C", str(repo), *step], check=True, capture_output=True, env=env)
    results = write(tmp_path / "r.csv", walls("a", [10, 12]))
    found = printed(capsys, "predictions score", [str(predictions), results])
    assert found["tally"] == {"hit": 1, "miss": 0, "not_scorable": 0} and found["predictions"][0]["id"] == "p1"


def test_every_schema_is_documented() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "json.md").read_text(encoding="utf-8")
    for command, schema in SCHEMAS.items():
        assert f"## `bench {command} --json`" in page and json.dumps(schema, indent=2, ensure_ascii=False) in page
