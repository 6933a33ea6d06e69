"""The contract's columns of the results row (docs/results.md; DESIGN's list, in this order): other tools read them
by name and position, so they come first and change only with the contract. The row's other column groups
follow (bench/results/row.py composes them)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.column import col


@dataclass
class ContractColumns:
    """The first columns of every row; None means not measured (an empty cell), a text column's empty value is ""."""

    run_id: str = col(
        "`<UTC time>-<fixture>-<preset>-<ctx>-r<rep>-<random>`; artifacts in `results/runs/<run_id>/`",
        contract=True,
    )
    started_at: str = col("UTC start time (ISO 8601)", contract=True)
    git_sha: str = col("commit of this repository (git_dirty: with uncommitted changes)", contract=True)
    fixture: str = col("the task (`fixtures/<name>/`)", compare="names", resume=True, contract=True)
    preset: str = col(
        "the agent's preset (part2, clearing, part3, part3+, strict, late)",
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
    server_build: str = col(
        "the llama.cpp build Flint runs: its /props build_info, or server_build_pin when the binary cannot tell "
        "(server_build_from says which)",
        compare="setup",
        contract=True,
    )
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
