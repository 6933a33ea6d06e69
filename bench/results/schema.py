"""The results CSV's columns and the values with a fixed meaning, all derived from the row model
(bench.results.row.ResultRow): what each column holds is documented in docs/results.md, generated from it.

A value that was not measured is the empty string, never 0: the reason is in `error` or `gpu_mem_method`.
"""

from __future__ import annotations

from collections.abc import Mapping

from bench.results.row import model
from bench.results.serving import FORCED_SERVING as FORCED_SERVING  # the values of flint_serving
from bench.results.serving import NATIVE_SERVING as NATIVE_SERVING

MODEL = model()
COLUMNS = [c.name for c in MODEL]
# The contract columns come first, in a fixed order; the provenance and detail columns after them.
CONTRACT_COLUMNS = [c.name for c in MODEL if c.contract]
EXTRA_COLUMNS = [c.name for c in MODEL if not c.contract]

# The columns that say which configuration a row belongs to (compare and report group by these): its names, and
# what it ran on (runs that differ in any of these are never pooled). flint_serving: rows of a model forced to call
# tools (bench/llama/forced_tools.py) are never compared with others.
GROUP_COLUMNS = [c.name for c in MODEL if c.compare == "names"]
SETUP_COLUMNS = [c.name for c in MODEL if c.compare == "setup"]
# Which way is better, for compare's changes and gates and history's series.
LOWER_IS_BETTER = [c.name for c in MODEL if c.better == "lower"]
HIGHER_IS_BETTER = [c.name for c in MODEL if c.better == "higher"]

# Columns added after some files were written, with the value every row of such a file had: before flint_serving,
# Flint was always served natively. Readers fill these in, so old rows group with today's native rows.
ADDED_COLUMN_VALUES = {c.name: c.before for c in MODEL if c.before is not None}

# A run's inputs: a row whose values in these columns match a planned run means that run is already measured.
INPUT_COLUMNS = [c.name for c in MODEL if c.resume]
# Columns that must agree across one file: a file holds one version of the agent, the models and the sampling.
SHARED_INPUT_COLUMNS = [c.name for c in MODEL if c.per_file]

# Stop reasons: the agent's own, plus the bench's label for runs that failed for reasons outside the agent.
# resource_exhausted is the bench's too, but the agent's failure: its run used up a limit of the sandbox (memory,
# the size of its trace), so it is counted with the agent's runs and not run again on --resume.
AGENT_STOP_REASONS = ["done", "step_limit", "context_exhausted", "server_error", "interrupted", "resource_exhausted"]
INFRA_STOP_REASON = "infra_error"
RESOURCE_STOP_REASON = "resource_exhausted"

# How the cross-check of reprocessed tokens against Flint's /metrics came out (bench.measure.trace_numbers).
REPROCESSED_CHECKS = ["ok", "mismatch", "counter_reset", "unchecked"]


def run_key(cells: Mapping[str, str]) -> tuple[str, ...]:
    """The --resume key of a row, from its cells (a planned run's key comes from its cells too: the same text)."""
    return tuple(cells.get(c, "") for c in INPUT_COLUMNS)
