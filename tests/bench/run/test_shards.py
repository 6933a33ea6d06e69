"""Shards of a plan (bench.run.shards) and their merge (bench.run.merge): properties over generated matrices, and
the pipeline with the fakes (no llama-server, no agent process): the shards of a matrix, run one after another,
merge into exactly the single bench's runs."""

from __future__ import annotations

import collections
import csv
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from small_task import SETTINGS

from agent.server import Props
from bench import ROOT
from bench.cli import main
from bench.config import BenchConfig
from bench.errors import ConfigError, ResultsError
from bench.results.append import append_row, encode_line, read_rows
from bench.results.read import Row
from bench.results.schema import COLUMNS
from bench.run.merge import merge, merge_files, missing_file
from bench.run.plan import PlannedRun, Provenance, RunInputs, plan_runs
from bench.run.runner import Bench
from bench.run.shards import Shard, planned_id, shard_out, shard_plan
from bench.servers.base import Endpoints
from bench.testing.fakes import FakeFactory, FakeSandboxes, FakeServers, ScriptedRun

PRESETS = ["part2", "part3", "clearing", "strict"]
CTXS = [1024, 2048, 4096, 8192]
matrices = st.fixed_dictionaries(
    {
        "fixtures": st.lists(st.sampled_from(["todo_repo", "ledger_repo"]), min_size=1, max_size=2, unique=True),
        "presets": st.lists(st.sampled_from(PRESETS), min_size=1, max_size=3, unique=True),
        "ctx": st.lists(st.sampled_from(CTXS), min_size=1, max_size=4, unique=True),
        "reps": st.integers(1, 4),
    }
)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plan_of(matrix: dict[str, object], **changes: object) -> tuple[BenchConfig, list[PlannedRun]]:
    config = BenchConfig(use_jeff=False, **(matrix | changes))  # type: ignore[arg-type]
    return config, plan_runs(config, ROOT)


@FAST
@given(matrices, st.integers(1, 9))
def test_the_shards_partition_the_plan_evenly_by_ctx(matrix: dict[str, object], count: int) -> None:
    _, plan = plan_of(matrix)
    shards = [shard_plan(plan, Shard(index, count)) for index in range(1, count + 1)]
    dealt = [planned_id(run) for shard in shards for run in shard]
    assert collections.Counter(dealt) == collections.Counter(planned_id(run) for run in plan)  # each exactly once
    sizes = [len(shard) for shard in shards]
    assert max(sizes) - min(sizes) <= 1
    for ctx in {run.ctx for run in plan}:
        per_ctx = [sum(run.ctx == ctx for run in shard) for shard in shards]
        assert max(per_ctx) - min(per_ctx) <= 1, (ctx, per_ctx)
    for shard in shards:  # in plan order: the servers start once per window in a shard too
        assert [run.ctx for run in shard] == sorted(run.ctx for run in shard)


@FAST
@given(matrices, st.integers(1, 5))
def test_a_shard_is_a_function_of_the_plan_and_its_runs_have_the_single_benchs_inputs(
    matrix: dict[str, object], count: int
) -> None:
    single, plan = plan_of(matrix)
    endpoints = Endpoints(4096, "http://127.0.0.1:1", Props(4096, "/m/f.gguf", "b1-x", True), None)
    provenance = Provenance("sha", False)

    def keys(config: BenchConfig, runs: list[PlannedRun]) -> collections.Counter[tuple[str, ...]]:
        return collections.Counter(RunInputs.of(r, config, endpoints, ("local", "x"), provenance).key() for r in runs)

    sharded: collections.Counter[tuple[str, ...]] = collections.Counter()
    for index in range(1, count + 1):
        config, again = plan_of(matrix, shard=f"{index}/{count}")
        runs = shard_plan(again, Shard(index, count))
        assert runs == shard_plan(plan_runs(config, ROOT), Shard(index, count))  # computed twice: the same runs
        sharded += keys(config, runs)
    assert sharded == keys(single, plan)


def test_shard_text_and_file_names() -> None:
    assert str(Shard.parse(" 2/4 ")) == "2/4"
    for wrong in ("0/2", "3/2", "2", "a/b", "1/0"):
        with pytest.raises(ConfigError):
            Shard.parse(wrong)
    assert shard_out(Path("results/m.csv"), Shard(2, 4)) == Path("results/m-shard2of4.csv")
    assert shard_out(Path("results/m-shard2of4.csv"), Shard(2, 4)) == Path("results/m-shard2of4.csv")
    assert shard_out(Path("results/m.csv"), None) == Path("results/m.csv")
    with pytest.raises(ConfigError, match="1 <= I <= N"):
        from bench.config import load_config

        load_config(None, {"shard": "5/4"})


# Merge: rows made up from the model's columns.


def row(run: int, **cells: str) -> dict[str, str]:
    base = {column: "" for column in COLUMNS}
    base |= {"run_id": f"r{run}", "started_at": f"2026-12-01T10:{run:02d}:00", "fixture": "todo_repo"}
    base |= {"preset": "part3", "ctx": "4096", "rep": str(run), "stop_reason": "done", "agent_version": "v1"}
    base |= {"sampling": '{"temperature": 0}', "flint_model": "f.gguf"}
    return base | cells


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_bytes(encode_line(COLUMNS))  # the header alone: a shard with no runs
    for one in rows:
        append_row(path, one)
    return path


rows_lists = st.lists(st.integers(1, 30), max_size=12).map(lambda runs: [row(run) for run in runs])


@FAST
@given(rows_lists, rows_lists)
def test_merging_is_idempotent_and_the_order_of_the_files_does_not_matter(
    tmp_path_factory: pytest.TempPathFactory, first: list[dict[str, str]], second: list[dict[str, str]]
) -> None:
    where = tmp_path_factory.mktemp("merge")
    a, b = write(where / "a.csv", first), write(where / "b.csv", second)
    once = merge_files([a, b]).rows
    assert merge_files([b, a]).rows == once
    assert sorted(r["run_id"] for r in once) == sorted({r["run_id"] for r in first + second})  # duplicates once
    merge([a, b], where / "m.csv")
    assert read_rows(where / "m.csv") == once
    merge([where / "m.csv", a], where / "m.csv")  # merged again, into itself, with one of its parts: no change
    assert read_rows(where / "m.csv") == once


@pytest.mark.parametrize(
    ("column", "value"),
    [("sampling", '{"temperature": 1}'), ("flint_model", "g.gguf"), ("keep", "3"), ("flint_model_sha256", "f2")],
)
def test_files_of_different_benches_are_refused_naming_file_and_column(tmp_path: Path, column: str, value: str) -> None:
    a = write(tmp_path / "a.csv", [row(1)])
    b = write(tmp_path / "b.csv", [row(2, **{column: value})])
    with pytest.raises(ResultsError) as caught:
        merge_files([a, b])
    message = str(caught.value)
    assert "\n" not in message and str(b) in message and f"column {column} " in message and str(a) in message


def test_a_file_of_another_schema_is_refused_naming_its_column(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", [row(1)])
    old = tmp_path / "old.csv"
    with old.open("w", newline="") as f:
        writer = csv.DictWriter(f, [c for c in COLUMNS if c != "shard"])
        writer.writeheader()
        writer.writerow({k: v for k, v in row(2).items() if k != "shard"})
    with pytest.raises(ResultsError, match=r"old\.csv was written with other columns \(lacks shard\)"):
        merge_files([a, old])


def test_two_rows_of_one_planned_run_are_both_kept_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    a = write(tmp_path / "a.csv", [row(1, stop_reason="infra_error"), row(2)])
    b = write(tmp_path / "b.csv", [row(3, rep="1", shard="2/2")])
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "m.csv")]) == 0
    assert [r["run_id"] for r in read_rows(tmp_path / "m.csv")] == ["r1", "r2", "r3"]
    assert "todo_repo part3 ctx=4096 rep=1 has 2 rows, all kept: r1 (infra_error, shard -), r3 (done, shard 2/2)" in (
        caplog.text
    )
    assert main(["merge", str(a), "--out", str(tmp_path / "m.csv")]) == 2  # never over another file


# The pipeline: shards of a matrix with the fakes, one after another, merged; a missing shard is listed.


# The suite's small task (tests/small_task.py): these tests read the plan, the shards and the merge, not the grading.
MATRIX = {**SETTINGS, "presets": ["part3"], "ctx": [4096], "reps": 3}


def run_shard(tmp_path: Path, shard: str, runs: Sequence[ScriptedRun] = (), **changes: object) -> list[Row]:
    config = BenchConfig(use_jeff=False, out=str(tmp_path / "m.csv"), shard=shard, **(MATRIX | changes))  # type: ignore[arg-type]
    servers = FakeServers()
    return Bench(config, FakeFactory(config, servers, FakeSandboxes(servers, runs), checkout=ROOT), checkout=ROOT).run()


@pytest.mark.processes  # each run is graded by pytest in a child process
def test_shards_run_apart_merge_into_the_single_benchs_runs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = tmp_path / "bench.yaml"
    config.write_text(json.dumps(MATRIX))
    one = run_shard(tmp_path, "1/2", [ScriptedRun(infra_error="the container did not start")])
    assert (tmp_path / "m-shard1of2.csv").exists() and not (tmp_path / "m.csv").exists()
    assert [(r["shard"], r["rep"]) for r in one] == [("1/2", "1"), ("1/2", "3")]  # dealt round robin
    merged, missing = tmp_path / "merged.csv", missing_file(tmp_path / "merged.csv")
    parts = [str(tmp_path / "m-shard1of2.csv")]
    assert main(["merge", *parts, "--config", str(config), "--require-complete", "--out", str(merged)]) == 1
    assert missing.read_text().splitlines() == ["calc part3 ctx=4096 rep=1", "calc part3 ctx=4096 rep=2"]
    assert "2 planned runs no shard delivered" in caplog.text  # shard 2 never ran; rep 1 is an infra_error

    (again,) = run_shard(tmp_path, "1/2", resume=True)  # --resume of shard 1: its own file, its infra_error run
    assert again["rep"] == "1" and len(read_rows(tmp_path / "m-shard1of2.csv")) == 3
    run_shard(tmp_path, "2/2")
    parts.append(str(tmp_path / "m-shard2of2.csv"))
    merged.unlink()
    assert main(["merge", *parts, "--config", str(config), "--require-complete", "--out", str(merged)]) == 0
    assert missing.read_text() == ""
    rows = read_rows(merged)
    measured = [planned_id_of(r) for r in rows if r["stop_reason"] != "infra_error"]
    _, plan = plan_of(MATRIX)
    assert sorted(measured) == sorted(planned_id(run) for run in plan)
    assert len(rows) == 4 and {r["shard"] for r in rows} == {"1/2", "2/2"}


@pytest.mark.usefixtures("child_processes")
def test_a_shard_without_runs_writes_the_header_alone(tmp_path: Path) -> None:
    assert run_shard(tmp_path, "4/4", reps=3) == []
    assert read_rows(tmp_path / "m-shard4of4.csv") == [] and (tmp_path / "m-shard4of4.csv").stat().st_size > 0


def planned_id_of(one: Row) -> tuple[str, ...]:
    return (one["fixture"], one["preset"], one["ctx"], one["rep"])


def test_the_scale_out_flags_become_settings() -> None:
    from bench.cli import build_parser, settings

    given = settings(build_parser().parse_args(["run", "--shard", "2/4", "--workers", "3"]))
    assert (given.shard, given.workers, given.gpu_devices) == ("2/4", 3, None)
    assert settings(build_parser().parse_args(["run", "--gpu-devices", "all"])).gpu_devices == "all"
    assert settings(build_parser().parse_args(["run", "--gpu-devices", "0,GPU-1"])).gpu_devices == ["0", "GPU-1"]
    assert main(["run", "--shard", "3/2"]) == 2 and main(["run", "--workers", "2", "--gpu-devices", "all"]) == 2
