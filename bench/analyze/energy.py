"""Energy per solved task: the joules the GPU used over a group's runs (gpu_energy_j, NVML's counter,
bench/measure/sampler.py), every run's, the failed ones' too, divided by the runs that completed. What a solved task
costs in energy, for `report` and `compare`; infra_error runs measured nothing of the agent and are left out."""

from __future__ import annotations

from collections.abc import Sequence

from bench.analyze.table import agent_runs, fmt_number
from bench.results.read import is_completed
from bench.results.row import ResultRow

COLUMN = "gpu_energy_j"
LABEL = "GPU energy per completed run"


def measured_energy(rows: Sequence[ResultRow]) -> bool:
    """Whether any run measured its energy: the line or column is shown only then."""
    return any(row.gpu_energy_j is not None for row in rows)


def energy_per_completed(rows: Sequence[ResultRow]) -> float | None:
    """The runs' joules over the runs completed; None where a run's energy was not measured (a partial sum would look
    measured and be too low) or none completed."""
    runs = agent_runs(rows)
    energies = [row.gpu_energy_j for row in runs]
    solved = sum(is_completed(row) for row in runs)
    if not runs or not solved or any(joules is None for joules in energies):
        return None
    return sum(joules or 0.0 for joules in energies) / solved


def fmt_energy_per_completed(rows: Sequence[ResultRow]) -> str:
    """`1,840 J`, or n/a with why where energy_per_completed has no figure."""
    found = energy_per_completed(rows)
    if found is not None:
        return f"{fmt_number(found)} J"
    runs = agent_runs(rows)
    energies = [row.gpu_energy_j for row in runs]
    if not runs or any(joules is None for joules in energies):
        return "n/a"
    return f"n/a (none completed; {fmt_number(sum(joules or 0.0 for joules in energies))} J in all)"
