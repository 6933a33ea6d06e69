"""`python -m bench compare OLD.csv NEW.csv [MORE.csv ...]`: the same configurations side by side, file by file.

Rows are grouped by the configuration columns (bench.results.schema.GROUP_COLUMNS). For each group and file: runs,
runs completed, hidden tests passed per run, stop reasons, and median [min–max] of the measured values of each
metric; then the change from the first file to each later one.

Noise rule: a change of a median is "within noise" when the two files' [min–max] ranges overlap, "beyond noise"
when they do not, and "noise unknown" when either file measured the metric in fewer than two runs.

Gates (`--fail-on METRIC[:PCT]`, repeatable) make the command exit 1 when a metric got worse by more than PCT:
- lower is better (wall_s, prompt_tokens_reprocessed, peak_gpu_mib_*, ... see LOWER_IS_BETTER): the median grew
  by more than PCT percent of the first file's median; default PCT 10.
- hidden_passed (higher is better): the median fell by more than PCT percent; default 0 (any fall).
- completed: the share of runs completed fell by more than PCT percentage points; default 0 (any fall).
A change within noise never trips a gate; a group missing from a file, or a metric not measured, is reported
and does not trip it either.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.analyze.table import (
    GroupKey,
    constant_columns,
    fmt_completed,
    fmt_measured,
    fmt_number,
    fmt_values,
    group_rows,
    group_title,
    markdown_table,
    spread,
    stop_reasons,
    varying_columns,
)
from bench.errors import ConfigError
from bench.results.read import Row, is_completed, measured, read_runs

LOWER_IS_BETTER = [
    "wall_s",
    "model_s",
    "harness_s",
    "steps",
    "prompt_tokens",
    "prompt_tokens_reprocessed",
    "completion_tokens",
    "max_request_tokens",
    "clearings",
    "cut_answers",
    "context_400s",
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
]
HIGHER_IS_BETTER = ["hidden_passed"]
SHOWN_METRICS = [
    "wall_s",
    "prompt_tokens_reprocessed",
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
]
DEFAULT_LIMITS = {"completed": 0.0, "hidden_passed": 0.0}
DEFAULT_LIMIT = 10.0
NO_RUNS = "—"


@dataclass(frozen=True)
class Gate:
    """A metric whose regression beyond `limit` (percent; percentage points for completed) fails the command."""

    metric: str
    limit: float


@dataclass(frozen=True)
class Change:
    """How one metric moved from the first file to a later one."""

    text: str
    worse_by: float | None  # in the gate's unit; negative when it improved; None when it cannot be told
    within_noise: bool = False


def parse_gate(text: str) -> Gate:
    metric, _, limit = text.partition(":")
    known = ["completed", *HIGHER_IS_BETTER, *LOWER_IS_BETTER]
    if metric not in known:
        raise ConfigError(f"--fail-on {text!r}: unknown metric {metric!r}; choose from {', '.join(known)}")
    if not limit:
        return Gate(metric, DEFAULT_LIMITS.get(metric, DEFAULT_LIMIT))
    try:
        value = float(limit)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise ConfigError(f"--fail-on {text!r}: the threshold must be a percentage >= 0, e.g. {metric}:20")
    return Gate(metric, value)


def metric_change(metric: str, old: list[Row], new: list[Row]) -> Change:
    if not old or not new:
        return Change("n/a", None)
    if metric == "completed":
        return _completion_change(old, new)
    return _median_change(metric, old, new)


def _completion_change(old: list[Row], new: list[Row]) -> Change:
    points = (_completed_share(new) - _completed_share(old)) * 100
    return Change(f"{_signed(points, '{:.0f}')} pp", -points)


def _completed_share(rows: list[Row]) -> float:
    return sum(is_completed(row) for row in rows) / len(rows)


def _median_change(metric: str, old: list[Row], new: list[Row]) -> Change:
    before, after = spread(measured(old, metric)), spread(measured(new, metric))
    if before is None or after is None:
        return Change("n/a", None)
    if before.count < 2 or after.count < 2:
        noise = "noise unknown"
    else:
        noise = "within noise" if before.overlaps(after) else "beyond noise"
    delta = after.median - before.median
    if before.median != 0:
        percent = delta / abs(before.median) * 100
        text = f"{_signed(delta)} ({_signed(percent, '{:.1f}')}%, {noise})"
    else:
        percent = 0.0 if delta == 0 else math.copysign(math.inf, delta)
        text = f"{_signed(delta)} (from 0, {noise})"
    worse_by = percent if metric not in HIGHER_IS_BETTER else -percent
    return Change(text, worse_by, noise == "within noise")


def _signed(value: float, style: str = "") -> str:
    """+65, -3.5, ±0: the sign always shown; `style` formats the size (thousands separators by default)."""
    size = style.format(abs(value)) if style else fmt_number(abs(value))
    return ("+" if value > 0 else "±" if value == 0 else "-") + size


def file_labels(files: Sequence[str]) -> list[str]:
    """Short column names: the file names, with as many parent folders as it takes to tell them apart."""
    parts = [Path(file).parts for file in files]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{i}:{file}" for i, file in enumerate(files, start=1)]  # the same file given twice


def group_table(per_file: list[list[Row]], labels: list[str], metrics: list[str]) -> str:
    """One configuration: a line per metric, a column per file, then a change column per later file."""
    headers = ["metric", *labels, *(f"{label} vs {labels[0]}" for label in labels[1:])]

    def line(name: str, cell: Callable[[list[Row]], str], change_metric: str | None) -> list[str]:
        cells = [cell(rows) if rows else NO_RUNS for rows in per_file]
        changes = [
            metric_change(change_metric, per_file[0], rows).text if change_metric else "" for rows in per_file[1:]
        ]
        return [name, *cells, *changes]

    lines = [
        line("runs", lambda rows: str(len(rows)), None),
        line("completed", fmt_completed, "completed"),
        line("hidden passed", lambda rows: fmt_values(rows, "hidden_passed"), "hidden_passed"),
        line("stop reasons", stop_reasons, None),
    ]
    lines += [line(metric, _spread_cell(metric), metric) for metric in metrics]
    return markdown_table(headers, lines)


def _spread_cell(metric: str) -> Callable[[list[Row]], str]:
    return lambda rows: fmt_measured(rows, metric)


def check_gates(gates: list[Gate], groups: list[tuple[str, list[list[Row]]]], labels: list[str]) -> list[str]:
    """One line per gate and comparison; lines starting with FAIL tripped."""
    lines = []
    for gate in gates:
        for title, per_file in groups:
            for label, rows in zip(labels[1:], per_file[1:], strict=True):
                change = metric_change(gate.metric, per_file[0], rows)
                lines.append(_gate_line(gate, change, f"{title}: {label} vs {labels[0]}"))
    return lines


def _gate_line(gate: Gate, change: Change, where: str) -> str:
    unit = " pp" if gate.metric == "completed" else "%"
    limit = f"{gate.metric} worse by more than {gate.limit:g}{unit}"
    if change.worse_by is None:
        return f"skip  {limit} in {where}: not measured in both files"
    tripped = change.worse_by > gate.limit and not change.within_noise
    return f"{'FAIL' if tripped else 'ok  '}  {limit} in {where}: {change.text}"


def compare(files: Sequence[str], gates: Sequence[Gate] = ()) -> tuple[str, bool]:
    """The comparison as markdown, and whether any gate tripped."""
    tables = [group_rows(read_runs(file)) for file in files]
    keys: list[GroupKey] = list(dict.fromkeys(key for table in tables for key in table))
    labels = file_labels(files)
    all_rows = [row for table in tables for rows in table.values() for row in rows]
    metrics = [m for m in SHOWN_METRICS if measured(all_rows, m)]
    metrics += [g.metric for g in gates if g.metric in LOWER_IS_BETTER and g.metric not in metrics]
    unmeasured = [m for m in SHOWN_METRICS if m not in metrics]
    shown = varying_columns(keys)
    groups = [(group_title(key, shown), [table.get(key, []) for table in tables]) for key in keys]

    out = [f"# Compare: {' → '.join(labels)}", ""]
    out += [f"Same in every group: {', '.join(constant_columns(keys))}."] if constant_columns(keys) else []
    out += [f"Not measured in any file: {', '.join(unmeasured)}."] if unmeasured else []
    out += ["Metrics are median [min–max] over the runs that measured them; a change is within noise when the two"]
    out += ["ranges overlap. Completed = stopped with done and all hidden tests passed.", ""]
    for title, per_file in groups:
        out += [f"## {title}", "", group_table(per_file, labels, metrics), ""]
    gate_lines = check_gates(list(gates), groups, labels)
    if gate_lines:
        out += ["## Gates", "", *(f"    {line}" for line in gate_lines), ""]
    return "\n".join(out), any(line.startswith("FAIL") for line in gate_lines)


def command(args: argparse.Namespace) -> int:
    gates = [parse_gate(text) for text in args.fail_on or []]
    report, tripped = compare(args.files, gates)
    print(report)
    return 1 if tripped else 0
