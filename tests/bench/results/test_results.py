import csv
from pathlib import Path

import pytest

from bench.errors import ResultsError
from bench.results.append import append_row, check_same_inputs, read_rows
from bench.results.schema import COLUMNS, CONTRACT_COLUMNS, INPUT_COLUMNS, run_key

# The contract of docs/results.md, in order: other tools read these columns by name and position.
CONTRACT = (
    "run_id, started_at, git_sha, fixture, preset, ctx, rep, sandbox, servers, flint_model, jeff_model, "
    "server_build, stop_reason, steps, wall_s, model_s, harness_s, prompt_tokens, prompt_tokens_reprocessed, "
    "cache_tokens, completion_tokens, max_request_tokens, clearings, cut_answers, context_400s, "
    "peak_gpu_mib_flint, peak_gpu_mib_jeff, peak_gpu_mib_device, gpu_name, gpu_mem_method, hidden_passed, "
    "hidden_total, visible_passed, files_changed, tests_added, failure_labels, error"
)


def test_header_starts_with_the_contract_columns_in_order() -> None:
    assert CONTRACT.split(", ") == CONTRACT_COLUMNS
    assert COLUMNS[: len(CONTRACT_COLUMNS)] == CONTRACT_COLUMNS
    assert len(set(COLUMNS)) == len(COLUMNS)
    assert set(INPUT_COLUMNS) <= set(COLUMNS)


def test_rows_are_appended_with_empty_strings_for_unmeasured_values(tmp_path: Path) -> None:
    out = tmp_path / "r" / "results.csv"
    append_row(out, {"run_id": "a", "ctx": "4096", "peak_gpu_mib_flint": ""})
    append_row(out, {"run_id": "b", "ctx": "8192"})
    with open(out, newline="") as f:
        lines = list(csv.reader(f))
    assert lines[0] == COLUMNS
    assert len(lines) == 3
    rows = read_rows(out)
    assert [r["run_id"] for r in rows] == ["a", "b"]
    assert rows[0]["peak_gpu_mib_flint"] == "" and rows[1]["wall_s"] == ""


def test_a_row_outside_the_schema_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside the schema"):
        append_row(tmp_path / "x.csv", {"run_id": "a", "bogus": "1"})


def test_a_foreign_csv_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ResultsError, match="not a results file"):
        read_rows(path)


def test_mixing_agent_versions_in_one_file_is_refused(tmp_path: Path) -> None:
    planned = {"agent_version": "v2", "sampling": "{}", "flint_model_sha256": "m", "jeff_model_sha256": "j"}
    old = dict(planned, agent_version="v1")
    with pytest.raises(ResultsError, match="different agent_version"):
        check_same_inputs(tmp_path / "r.csv", [old], planned)
    check_same_inputs(tmp_path / "r.csv", [dict(planned)], planned)  # same inputs: accepted


def test_run_key_depends_on_every_input_column() -> None:
    row = {c: f"v-{c}" for c in INPUT_COLUMNS}
    for column in INPUT_COLUMNS:
        assert run_key(dict(row, **{column: "changed"})) != run_key(row)
