"""The results CSV's schema: its columns in a fixed, documented order, and the values with a fixed meaning.

A value that was not measured is the empty string, never 0: the reason is in `error` or `gpu_mem_method`.
"""

from __future__ import annotations

# The contract columns (DESIGN.md §3.5), in this order; README "Results columns" gives units and meaning.
CONTRACT_COLUMNS = [
    "run_id",
    "started_at",
    "git_sha",
    "fixture",
    "preset",
    "ctx",
    "rep",
    "sandbox",
    "servers",
    "flint_model",
    "jeff_model",
    "server_build",
    "stop_reason",
    "steps",
    "wall_s",
    "model_s",
    "harness_s",
    "prompt_tokens",
    "prompt_tokens_reprocessed",
    "cache_tokens",
    "completion_tokens",
    "max_request_tokens",
    "clearings",
    "cut_answers",
    "context_400s",
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
    "gpu_name",
    "gpu_mem_method",
    "hidden_passed",
    "hidden_total",
    "visible_passed",
    "files_changed",
    "tests_added",
    "failure_labels",
    "error",
]

# Provenance and detail beyond the contract, after it.
EXTRA_COLUMNS = [
    "claimed_done",
    "visible_total",
    "visible_tests_modified",
    "git_dirty",
    "agent_version",
    "fixture_sha",
    "flint_model_sha256",
    "jeff_model_sha256",
    "sampling",
    "max_steps",
    "keep",
    "clear_at",
    "jeff_requests",
    "prompt_tokens_metrics",
    "baseline_gpu_mib_device",
    "baseline_gpu_mib_flint",
    "baseline_gpu_mib_jeff",
    "gpu_uuid",
    "gpu_other_processes",
    "gpu_samples",
    "gpu_sample_interval_s",
    "reprocessed_check",
    "jeff_prompt_tokens",
    "jeff_completion_tokens",
    "jeff_model_s",
    "server_build_pin",
    "flint_serving",
]

COLUMNS = CONTRACT_COLUMNS + EXTRA_COLUMNS

# The columns that say which configuration a row belongs to (compare and report group by these).
# flint_serving: rows of a model forced to call tools (bench/servers/forced_tools.py) are never compared with others.
GROUP_COLUMNS = ["fixture", "preset", "ctx", "flint_model", "jeff_model", "flint_serving"]

# How Flint was served (flint_serving): the model's own template, or forced to answer with one tool call each time.
NATIVE_SERVING, FORCED_SERVING = "native", "forced_tools"
# Columns added after some files were written, with the value every row of such a file had: before flint_serving,
# Flint was always served natively. Readers fill these in, so old rows group with today's native rows.
ADDED_COLUMN_VALUES = {"flint_serving": NATIVE_SERVING}

# Stop reasons: the agent's own, plus the bench's label for runs that failed for reasons outside the agent.
# resource_exhausted is the bench's too, but the agent's failure: its run used up a limit of the sandbox (memory,
# the size of its trace), so it is counted with the agent's runs and not run again on --resume.
AGENT_STOP_REASONS = ["done", "step_limit", "context_exhausted", "server_error", "interrupted", "resource_exhausted"]
INFRA_STOP_REASON = "infra_error"
RESOURCE_STOP_REASON = "resource_exhausted"

# A run's inputs: a row whose values in these columns match a planned run means that run is already measured.
INPUT_COLUMNS = ["fixture", "fixture_sha", "preset", "ctx", "rep", "flint_model_sha256", "jeff_model_sha256",
                 "agent_version", "sampling", "max_steps", "keep", "clear_at", "flint_serving"]  # fmt: skip
# Columns that must agree across one file: a file holds one version of the agent, the models and the sampling.
SHARED_INPUT_COLUMNS = ["flint_model_sha256", "jeff_model_sha256", "agent_version", "sampling", "keep", "clear_at",
                        "flint_serving"]  # fmt: skip


# How the cross-check of reprocessed tokens against Flint's /metrics came out (bench.measure.trace_numbers).
REPROCESSED_CHECKS = ["ok", "mismatch", "counter_reset", "unchecked"]

Cell = str | int | float | bool | None  # a row's value before it becomes text


def cell(value: Cell) -> str:
    """A value as a CSV cell, the one place values become text: "" when not measured (None), never 0;
    booleans as true/false; floats in their shortest exact form (measures are rounded where they are taken)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def run_key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(c, "") for c in INPUT_COLUMNS)
