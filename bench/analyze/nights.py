"""Results files lined up as nights: per configuration, one point per file, oldest first; and a metric's series
over those nights with its change points.

Each file is one night: its date is the earliest started_at of its runs, its version the git_sha the runs were
made with. A configuration is the same as in compare (names and setup: never mixed), so a night on another GPU or
server build starts a series of its own. A night's value is the median of the agent's runs (infra_error runs are
counted apart); completed is the share of runs completed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.analyze.changepoints import change_points
from bench.analyze.changes import values_of
from bench.analyze.compare import file_labels
from bench.analyze.matching import file_date
from bench.analyze.table import agent_runs, group_rows, infra_errors
from bench.results.read import is_completed, read_runs
from bench.results.row import ResultRow


@dataclass(frozen=True)
class Night:
    """One file's runs of one configuration."""

    date: str
    version: str
    label: str
    rows: list[ResultRow]  # all of them, infra_error included
    infra: int

    @property
    def agent_rows(self) -> list[ResultRow]:
        return agent_runs(self.rows)


@dataclass(frozen=True)
class Series:
    """One metric over the nights of one configuration; `points` are (night index, value) for nights that
    measured it, `shifts` the indexes (into points) where a new regime starts."""

    metric: str
    points: list[tuple[int, float]]
    shifts: list[int]


def night_value(rows: Sequence[ResultRow], metric: str) -> float | None:
    if not rows:
        return None
    if metric == "completed":
        return sum(map(is_completed, rows)) / len(rows)
    values, _ = values_of(rows, metric)
    return statistics.median(values) if values else None


def series_of(nights: Sequence[Night], metric: str, alpha: float) -> Series:
    points = [(i, v) for i, night in enumerate(nights) if (v := night_value(night.agent_rows, metric)) is not None]
    return Series(metric, points, change_points([v for _, v in points], alpha))


def line_up(files: Sequence[str], skip_bad_rows: bool = False) -> dict[tuple[str, ...], list[Night]]:
    """Per configuration, its nights oldest first (date, then file name)."""
    # named as compare names them: with as many parent folders as it takes to tell files named alike apart
    loaded = [(label, read_runs(file, skip_bad_rows)) for label, file in zip(file_labels(files), files, strict=True)]
    loaded.sort(key=lambda item: (file_date(item[1]), item[0]))
    configs: dict[tuple[str, ...], list[Night]] = {}
    for name, rows in loaded:
        version = ", ".join(sorted({row.git_sha[:7] or "n/a" for row in rows}))
        for key, group in group_rows(rows).items():
            night = Night(
                date=file_date(group)[:10] or name, version=version, label=name, rows=group, infra=infra_errors(group)
            )
            configs.setdefault(key, []).append(night)
    return configs
