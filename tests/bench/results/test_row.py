"""The row model: the one place columns are declared, their cells written and read back, docs/results.md made."""

from __future__ import annotations

import pytest

from bench import ROOT
from bench.errors import ResultsError
from bench.results import schema
from bench.results.column import KINDS, columns_of
from bench.results.docs import render
from bench.results.row import ROW_GROUPS, ResultRow

# The example files the repository ships (results/ also holds a user's own files, of any age).
EXAMPLES = ("cpu-example-a.csv", "cpu-example-b.csv", "cpu-late.csv", "example/cpu-presets.csv")


def full_row() -> ResultRow:
    """A row with a value in every column, each of its column's type."""
    samples = {str: "x;y", int: 7, float: 1.25, bool: True, list: ["a", "b"]}
    return ResultRow(**{c.name: samples[c.kind] for c in schema.MODEL})


def test_docs_results_md_is_generated_from_the_model() -> None:
    assert (ROOT / "docs" / "results.md").read_text(encoding="utf-8") == render(), (
        "docs/results.md is out of date: run python -m bench.results.docs"
    )


def test_the_row_is_its_column_groups_side_by_side_in_the_shipped_files_order() -> None:
    """Each group of columns stands alone (none extends another); the row is theirs in ROW_GROUPS' order, which is
    the header of the example files shipped in results/ (written before the row was split into groups)."""
    assert all(group.__bases__ == (object,) for group in ROW_GROUPS)
    assert [column.name for group in ROW_GROUPS for column in columns_of(group)] == schema.COLUMNS
    for name in EXAMPLES:
        example = ROOT / "results" / name
        assert example.read_text(encoding="utf-8").splitlines()[0].split(",") == schema.COLUMNS, example.name


def test_every_column_has_a_one_line_doc_and_a_known_type() -> None:
    assert len(set(schema.COLUMNS)) == len(schema.COLUMNS)
    for column in schema.MODEL:
        assert column.doc.strip() and "\n" not in column.doc, column.name
        assert column.kind in KINDS, column.name


def test_the_keys_and_directions_are_the_ones_compare_and_resume_always_used() -> None:
    assert schema.GROUP_COLUMNS == ["fixture", "preset", "ctx", "flint_model", "jeff_model", "flint_serving"]
    assert set(schema.SETUP_COLUMNS) == {
        "flint_model_sha256",
        "jeff_model_sha256",
        "server_build",
        "gpu_name",
        "gpu_mem_method",
        "sandbox",
        # every setting that changes results is a key (issue 23): never pooled, never compared as one
        "servers",
        "server_package",
        "fixture_sha",
        "sampling",
        "max_steps",
        "keep",
        "clear_at",
        "swa_full",
        "ctx_checkpoints",
        "cache_reuse",
        "cache_ram_mib",  # what the prompt cache can reuse
        "checkpoint_min_step",
        "cache_idle_slots",
        "cache_type_k",
        "cache_type_v",
        "flash_attn",
        "flint_server_args",
        "jeff_server_args",  # and the servers' own
        "agent",  # which agent ran, and the API it spoke (bench/agents/)
        "api_dialect",
        "jeff_first_steps",  # the series' presets' own settings: jeff-first's K, Jeff's window
        "jeff_window",
        "spec_type",  # how Flint drafts: a run that drafts is never compared as like with one that does not
        "draft_model",
        "draft_model_sha256",
    }
    assert set(schema.INPUT_COLUMNS) == {
        "fixture",
        "fixture_sha",
        "preset",
        "ctx",
        "rep",
        "flint_model_sha256",
        "jeff_model_sha256",
        "agent",
        "agent_version",
        "sampling",
        "max_steps",
        "keep",
        "clear_at",
        "flint_serving",
        "flint_server_args",
        "jeff_server_args",
        "jeff_first_steps",
        "jeff_window",
    }
    assert set(schema.SHARED_INPUT_COLUMNS) == {
        "flint_model_sha256",
        "jeff_model_sha256",
        "sampling",
        "keep",
        "clear_at",
        "flint_serving",
    }
    assert schema.HIGHER_IS_BETTER == ["hidden_passed", "efficiency"]
    assert {"wall_s", "harness_s", "tools_s", "peak_gpu_mib_device", "jeff_model_s"} <= set(schema.LOWER_IS_BETTER)
    assert not {"cache_tokens", "hidden_total", "rep"} & set(schema.LOWER_IS_BETTER)


def test_a_row_reads_back_as_it_was_written() -> None:
    row = full_row()
    cells = row.cells()
    assert list(cells) == schema.COLUMNS
    assert (cells["ctx"], cells["wall_s"], cells["git_dirty"], cells["failure_labels"]) == ("7", "1.25", "true", "a;b")
    assert ResultRow.from_cells(cells) == row


def test_an_empty_cell_is_not_measured_and_never_zero() -> None:
    row = ResultRow.from_cells({"run_id": "r1", "ctx": "", "wall_s": " ", "claimed_done": ""})
    assert (row.ctx, row.wall_s, row.claimed_done, row.failure_labels, row.error) == (None, None, None, [], "")
    assert set(ResultRow().cells().values()) == {""}


def test_numbers_are_read_the_way_older_files_wrote_them() -> None:
    row = ResultRow.from_cells({"ctx": "8192.0", "wall_s": "nan", "git_dirty": "False"})
    assert (row.ctx, row.wall_s, row.git_dirty) == (8192, None, False)


@pytest.mark.parametrize(
    ("column", "text", "message"),
    [
        ("ctx", "4096.5", "ctx is '4096.5', not an integer"),
        ("wall_s", "fast", "wall_s is 'fast', not a number"),
        ("git_dirty", "yes", "git_dirty is 'yes', not a true/false"),
    ],
)
def test_a_cell_of_the_wrong_type_names_the_run_and_the_column(column: str, text: str, message: str) -> None:
    with pytest.raises(ResultsError, match=f"run r7: {message}; fix or remove that row"):
        ResultRow.from_cells({"run_id": "r7", column: text})


def test_a_column_a_file_predates_reads_as_the_value_its_rows_had() -> None:
    assert ResultRow.from_cells({"run_id": "old"}).flint_serving == "native"
    assert ResultRow.from_cells({"run_id": "old", "flint_serving": ""}).flint_serving == ""


def test_lookups_by_name_are_typed_and_refuse_unknown_columns() -> None:
    row = ResultRow.from_cells({"run_id": "r1", "ctx": "4096", "preset": "part3"})
    assert (row.number("ctx"), row.text("ctx"), row.number("wall_s")) == (4096.0, "4096", None)
    with pytest.raises(ResultsError, match="run r1: preset is 'part3', not a number"):
        row.number("preset")
    with pytest.raises(KeyError, match="no column 'bogus'"):
        row.value("bogus")
