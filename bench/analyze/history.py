"""`python -m bench history results/nightly-*.csv`: many results files lined up by date and version, per
configuration and metric, with the change points E-Divisive finds (bench.analyze.changepoints), and a figure
per configuration (bench.analyze.history_plots).

Each file is one point of a series (a night): its date is the earliest started_at of its runs, its version the
git_sha the runs were made with. A configuration is the same as in compare (names and setup: never mixed), so
a night on another GPU or server build starts a series of its own. A night's value is the median of the agent's
runs (infra_error runs are counted apart), and completed is the share of runs completed.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.analyze.changepoints import MIN_POINTS
from bench.analyze.changes import HIGHER_IS_BETTER, LOWER_IS_BETTER, signed
from bench.analyze.history_plots import plot_series
from bench.analyze.matching import Group, set_titles
from bench.analyze.nights import Night, Series, line_up, series_of
from bench.analyze.table import constant_columns, fmt_number, markdown_table, slug
from bench.errors import ConfigError
from bench.json_documents import SCHEMA_VERSION

log = logging.getLogger(__name__)
DEFAULT_METRICS = ["completed", "wall_s", "prompt_tokens_reprocessed", "peak_gpu_mib_flint"]


def describe_shift(series: Series, index: int, nights: Sequence[Night]) -> str:
    """`wall_s from 2026-11-13 (ab12cd3): 241 → 312 (+29.5%), medians of the nights before and after`."""
    start = series.points[series.shifts[index]][0]
    bounds = [0, *series.shifts, len(series.points)]
    before = [v for _, v in series.points[bounds[index] : bounds[index + 1]]]
    after = [v for _, v in series.points[bounds[index + 1] : bounds[index + 2]]]
    old, new = statistics.median(before), statistics.median(after)
    if series.metric == "completed":
        change = f"{old * 100:.0f}% → {new * 100:.0f}% completed"
    else:
        percent = f" ({signed((new - old) / old * 100, '{:.1f}')}%)" if old else ""
        change = f"{fmt_number(old)} → {fmt_number(new)}{percent}"
    night = nights[start]
    return f"{series.metric} from {night.date} ({night.version}, {night.label}): {change}"


def config_section(group: Group, nights: list[Night], metrics: list[str], alpha: float, figure: str) -> list[str]:
    series = [series_of(nights, metric, alpha) for metric in metrics]
    series = [s for s in series if s.points]
    starts = {(s.metric, s.points[i][0]) for s in series for i in s.shifts}
    out = [f"## {group.title}", "", f"{len(nights)} nights, {nights[0].date} to {nights[-1].date}.", ""]
    shifts = [describe_shift(s, i, nights) for s in series for i in range(len(s.shifts))]
    if len(nights) < MIN_POINTS:
        out += [f"Change points: too few nights to tell (E-Divisive needs {MIN_POINTS}).", ""]
    else:
        out += ["Change points (E-Divisive, p ≤ " + f"{alpha:g}): " + ("none." if not shifts else ""), ""]
        out += [f"- {line}" for line in shifts] + ([""] if shifts else [])
    plot_series(series, nights, group.title, figure)
    out += [f"![{', '.join(s.metric for s in series)} per night, {group.title}]({Path(figure).name})", ""]
    headers = ["night", "version", "file", "runs", "infra_error", *(s.metric for s in series)]
    lines = []
    for i, night in enumerate(nights):
        cells = []
        for s in series:
            value = dict(s.points).get(i)
            text = "n/a" if value is None else f"{value * 100:.0f}%" if s.metric == "completed" else fmt_number(value)
            cells.append(f"**{text}** ◆" if (s.metric, i) in starts else text)
        lines.append([night.date, night.version, night.label, str(len(night.agent_rows)), str(night.infra), *cells])
    return [*out, markdown_table(headers, lines), "", "◆ the first night of a new regime.", ""]


def write_history(
    files: Sequence[str], out_dir: Path, metrics: list[str], alpha: float, skip_bad_rows: bool = False
) -> tuple[Path, dict[str, Any]]:
    """history.md and its figures in out_dir; returns the page and the same as a JSON document."""
    configs = line_up(files, skip_bad_rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = [Group(key, [], split=True) for key in configs]  # a setup of its own is a series of its own
    set_titles(groups)
    constant = constant_columns(list(configs))
    found = [config_json(group, configs[group.key], metrics, alpha) for group in groups]
    out = [f"# History: {len(files)} files", ""]
    out += [f"Same in every configuration: {', '.join(constant)}.", ""] if constant else []
    out += ["Per night: the median of the agent's runs (completed: the share of runs completed); infra_error runs are"]
    out += ["counted apart. A change point marks the first night of a new regime of the series.", ""]
    for index, group in enumerate(groups, start=1):
        figure = out_dir / f"history-{index}-{slug(group.title)}.png"
        out += config_section(group=group, nights=configs[group.key], metrics=metrics, alpha=alpha, figure=str(figure))
    path = out_dir / "history.md"
    path.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    head = {"command": "history", "schema_version": SCHEMA_VERSION, "files": list(files), "alpha": alpha}
    rest = {"metrics": metrics, "same_in_every_configuration": constant, "report": str(path)}
    return path, {**head, **rest, "configurations": found}


def config_json(group: Group, nights: list[Night], metrics: list[str], alpha: float) -> dict[str, Any]:
    """One configuration's nights and change points, as bench.json_documents.HISTORY describes them."""
    series = [s for s in (series_of(nights, metric, alpha) for metric in metrics) if s.points]
    values = [{s.metric: dict(s.points).get(i) for s in series} for i in range(len(nights))]
    shifts = []
    for s in series:
        bounds = [0, *s.shifts, len(s.points)]
        for i, start in enumerate(s.shifts):
            before = [v for _, v in s.points[bounds[i] : bounds[i + 1]]]
            after = [v for _, v in s.points[bounds[i + 1] : bounds[i + 2]]]
            shifts.append(
                {
                    "metric": s.metric,
                    "night": s.points[start][0],
                    "before": statistics.median(before),
                    "after": statistics.median(after),
                    "text": describe_shift(s, i, nights),
                }
            )
    found = [
        {
            "date": night.date,
            "version": night.version,
            "file": night.label,
            "runs": len(night.agent_rows),
            "infra_error_runs": night.infra,
            "values": value,
        }
        for night, value in zip(nights, values, strict=True)
    ]
    return {"title": group.title, "nights": found, "change_points": shifts, "too_few_nights": len(nights) < MIN_POINTS}


@dataclass(frozen=True)
class HistoryOptions:
    """`bench history`'s options (bench/cli/history.py)."""

    files: list[str]
    metrics: list[str] = field(default_factory=list)  # none: DEFAULT_METRICS
    alpha: float = 0.01
    out_dir: Path | None = None  # None: history-report/ beside the first file
    skip_bad_rows: bool = False
    json: bool = False  # print the JSON document (bench.json_documents.HISTORY) rather than the page


def command(options: HistoryOptions) -> int:
    if not 0 < options.alpha < 1:
        raise ConfigError(f"--alpha {options.alpha}: give a level between 0 and 1, e.g. 0.05")
    known = ["completed", *HIGHER_IS_BETTER, *LOWER_IS_BETTER]
    unknown = [metric for metric in options.metrics if metric not in known]
    if unknown:
        raise ConfigError(f"--metric {unknown[0]}: unknown metric; choose from {', '.join(known)}")
    out_dir = options.out_dir or Path(options.files[0]).parent / "history-report"
    metrics = options.metrics or DEFAULT_METRICS
    path, found = write_history(
        files=options.files, out_dir=out_dir, metrics=metrics, alpha=options.alpha, skip_bad_rows=options.skip_bad_rows
    )
    print(json.dumps(found, indent=2, ensure_ascii=False) if options.json else path.read_text(encoding="utf-8"))
    log.info("wrote %s and its plots", path)
    return 0
