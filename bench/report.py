"""`python -m bench report RESULTS.csv`: a markdown report with PNG plots, written beside the CSV (or --out-dir).

For each configuration (group) the report has the article's per-run table (hidden tests, clearings, reprocessed
tokens, wall time, stop reason, failure labels), the failure labels counted, how much of each prompt the server
processed anew right after a clearing and otherwise, and one figure: per run, the window fill per step and the
share of each prompt processed anew. Two more figures cover all groups: completion and stop reasons, and peak
GPU memory per server. Traces are read from `<CSV dir>/runs/<run_id>/events.jsonl`; a run without one keeps
its row in the tables and gets a note.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure  # a bare Figure renders with Agg and never opens a window
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from bench.errors import ResultsError
from bench.labels import Event, load_trace
from bench.table import (
    Row,
    constant_columns,
    count_values,
    fmt_number,
    fmt_percent,
    fmt_spread,
    fmt_values,
    group_rows,
    group_title,
    is_completed,
    labels_of,
    markdown_table,
    measured,
    number,
    read_runs,
    spread,
    varying_columns,
)

GPU_COLUMNS = {"Flint": "peak_gpu_mib_flint", "Jeff": "peak_gpu_mib_jeff", "device": "peak_gpu_mib_device"}
STOP_COLOURS = {
    "done": "#2a9d4b",
    "step_limit": "#e9a23b",
    "context_exhausted": "#d1495b",
    "server_error": "#8c3b9e",
    "interrupted": "#7f7f7f",
    "infra_error": "#3b3b3b",
}
COLOURS = {
    "prompt": "#3d6fb6",
    "answer": "#9cc3e6",
    "ctx": "#d1495b",
    "clearing": "#2a9d4b",
    "cut": "#d1495b",
    "after": "#e07b39",
    "other": "#9a9a9a",
}
PLOT_COLUMNS = 4  # runs per figure row before wrapping


@dataclass(frozen=True)
class Request:
    """One answered request to Flint, as its `response` event told it."""

    step: int
    prompt_tokens: int | None  # the whole prompt, cached part included
    completion_tokens: int | None
    processed: int | None  # timings.prompt_n: prompt tokens computed anew
    after_clearing: bool

    @property
    def share_anew(self) -> float | None:
        if self.processed is None or not self.prompt_tokens:
            return None
        return self.processed / self.prompt_tokens


@dataclass
class Run:
    row: Row
    events: list[Event] | None
    note: str = ""  # why the trace could not be used
    requests: list[Request] = field(default_factory=list)

    @property
    def missing(self) -> str:
        return "no trace" if self.note.startswith("no event trace") else "trace unreadable"

    @property
    def name(self) -> str:
        return f"rep {self.row['rep']}" if self.row.get("rep") else self.row["run_id"]


def requests_of(events: list[Event]) -> list[Request]:
    """The answered requests in order; the first one after each `clear` event is marked."""
    found: list[Request] = []
    cleared = False
    for event in events:
        if is_clearing(event):
            cleared = True
        elif event.get("event") == "response":
            found.append(_request(event, cleared, default_step=len(found) + 1))
            cleared = False
    return found


def is_clearing(event: Event) -> bool:
    """A `clear` event that changed something; one that changed 0 messages left the prompt (and cache) as it was."""
    return event.get("event") == "clear" and event.get("changed") != 0


def _request(event: Event, after_clearing: bool, default_step: int) -> Request:
    usage, timings = event.get("usage") or {}, event.get("timings") or {}
    processed = _int(timings.get("prompt_n"))
    prompt = _int(usage.get("prompt_tokens"))
    if prompt is None and processed is not None:  # older servers: the prompt is what was computed plus the cache
        prompt = processed + (_int(timings.get("cache_n")) or 0)
    step = _int(event.get("step")) or default_step
    return Request(step, prompt, _int(usage.get("completion_tokens")), processed, after_clearing)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def load_run(row: Row, runs_dir: Path) -> Run:
    path = runs_dir / row["run_id"] / "events.jsonl"
    if not path.is_file():
        return Run(row, None, f"no event trace at {path.relative_to(runs_dir.parent)}")
    try:
        events = load_trace(path)
    except ResultsError as e:
        return Run(row, None, str(e))
    return Run(row, events, requests=requests_of(events))


# ---- markdown ---------------------------------------------------------------------------------------------------


def cache_summary(runs: list[Run]) -> str:
    """The prompt-cache cost of clearing: how much of each prompt was computed anew, after a clearing or not."""
    after = [r.share_anew for run in runs for r in run.requests if r.after_clearing and r.share_anew is not None]
    other = [r.share_anew for run in runs for r in run.requests if not r.after_clearing and r.share_anew is not None]
    if not after and not other:
        return "Prompt cache: no request in the traces reported timings."
    if after:
        lowest, median = fmt_percent(min(after)), fmt_percent(statistics.median(after))
        text = (
            f"Right after a clearing: {sum(s > 0.5 for s in after)} of {len(after)} requests processed more than "
            f"half of their prompt anew (lowest {lowest}, median {median})."
        )
    else:
        text = "No request came right after a clearing."
    if other:
        text += (
            f" Other requests: {sum(s < 0.25 for s in other)} of {len(other)} processed less than a quarter anew "
            f"(median {fmt_percent(statistics.median(other))})."
        )
    return text


def run_table(runs: list[Run]) -> str:
    headers = ["run", "run_id", "hidden tests", "clearings", "cut answers", "400s", "reprocessed tokens"]
    headers += ["largest request", "wall s", "stop", "labels"]
    lines = []
    for run in runs:
        row = run.row
        hidden = f"{_cell(row, 'hidden_passed')} of {_cell(row, 'hidden_total')}"
        counts = [_cell(row, c) for c in ("clearings", "cut_answers", "context_400s", "prompt_tokens_reprocessed")]
        tail = [_cell(row, "max_request_tokens"), _cell(row, "wall_s"), row["stop_reason"] or "n/a"]
        lines.append([run.name, row["run_id"], hidden, *counts, *tail, ", ".join(labels_of(row)) or "—"])
    return markdown_table(headers, lines)


def _cell(row: Row, column: str) -> str:
    return fmt_number(number(row.get(column, ""), column, row.get("run_id", "?")))


def overview_table(groups: list[tuple[str, list[Run]]]) -> str:
    headers = ["group", "runs", "completed", "hidden passed", "stop reasons", "wall_s", "reprocessed tokens"]
    lines = []
    for title, runs in groups:
        rows = [run.row for run in runs]
        completed = f"{sum(is_completed(r) for r in rows)} of {len(rows)}"
        spreads = [fmt_spread(spread(measured(rows, c))) for c in ("wall_s", "prompt_tokens_reprocessed")]
        lines.append([title, str(len(rows)), completed, fmt_values(rows, "hidden_passed"), _stops(rows), *spreads])
    return markdown_table(headers, lines)


def _stops(rows: list[Row]) -> str:
    return count_values(row["stop_reason"] for row in rows)


def gpu_table(groups: list[tuple[str, list[Run]]]) -> str:
    servers = measured_servers(groups)
    lines = [
        [title, *(fmt_spread(spread(measured([r.row for r in runs], GPU_COLUMNS[name]))) for name in servers)]
        for title, runs in groups
    ]
    return markdown_table(["group", *(f"peak MiB, {name}" for name in servers)], lines)


def group_section(title: str, runs: list[Run], figure: str) -> list[str]:
    rows = [run.row for run in runs]
    label_counts = Counter(label for row in rows for label in labels_of(row))
    labels = ", ".join(f"{label} {count}" for label, count in sorted(label_counts.items())) or "none"
    completed = f"Completed {sum(is_completed(r) for r in rows)} of {len(rows)}"
    out = [f"## {title}", "", f"{completed}; hidden tests passed per run: {fmt_values(rows, 'hidden_passed')}.", ""]
    out += [run_table(runs), "", f"Failure labels: {labels}.", "", cache_summary(runs), ""]
    out += [f"![window fill and prompt processed anew, {title}]({figure})", ""]
    out += [f"- {run.name} ({run.row['run_id']}): {run.note}; its plots are empty." for run in runs if run.note]
    return out + ([""] if any(run.note for run in runs) else [])


# ---- plots ------------------------------------------------------------------------------------------------------


def plot_group(runs: list[Run], title: str, path: Path) -> None:
    """Per run: window fill per step above, share of the prompt processed anew below; one legend for all."""
    columns = min(len(runs), PLOT_COLUMNS)
    bands = -(-len(runs) // columns)
    fig = Figure(figsize=(max(4.2 * columns, 9.0), 1.0 + 5.4 * bands), layout="constrained")  # room for the legend
    grid = fig.add_gridspec(2 * bands, columns, height_ratios=[3, 2] * bands)
    for i, run in enumerate(runs):
        band, column = divmod(i, columns)
        fill, share = fig.add_subplot(grid[2 * band, column]), fig.add_subplot(grid[2 * band + 1, column])
        share.sharex(fill)
        plot_fill(fill, run)
        plot_share(share, run)
    fig.suptitle(title)
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    fig.savefig(path, dpi=90)


def _legend_handles() -> list[Artist]:
    return [
        Patch(color=COLOURS["prompt"], label="prompt tokens"),
        Patch(color=COLOURS["answer"], label="answer tokens"),
        Line2D([], [], color=COLOURS["ctx"], label="context window (ctx)"),
        Line2D([], [], color=COLOURS["clearing"], linestyle="--", label="clearing"),
        Line2D([], [], color=COLOURS["cut"], marker="X", linestyle="", label="cut answer"),
        Line2D([], [], color="black", marker="v", linestyle="", label="400: prompt tokens refused"),
        Patch(color=COLOURS["after"], label="request right after a clearing"),
        Patch(color=COLOURS["other"], label="other request"),
    ]


def plot_fill(ax: Axes, run: Run) -> None:
    ctx = number(run.row.get("ctx", ""), "ctx", run.row["run_id"])
    ax.set_title(f"{run.name}: {run.row['stop_reason'] or 'n/a'}", fontsize=10)
    ax.set_ylabel("tokens in the window")
    if run.events is None:
        _no_data(ax, run.missing)
        return
    if ctx is not None:
        ax.axhline(ctx, color=COLOURS["ctx"], linewidth=1.2)
    steps = [r.step for r in run.requests]
    prompts = [r.prompt_tokens or 0 for r in run.requests]
    answers = [r.completion_tokens or 0 for r in run.requests]
    ax.bar(steps, prompts, color=COLOURS["prompt"])
    ax.bar(steps, answers, bottom=prompts, color=COLOURS["answer"])
    totals = {r.step: (r.prompt_tokens or 0) + (r.completion_tokens or 0) for r in run.requests}
    highest = _mark_events(ax, run, totals, ctx or 0)
    ax.set_ylim(0, max([ctx or 0, highest, *totals.values()]) * 1.12 or 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")


def _mark_events(ax: Axes, run: Run, totals: dict[int, int], ctx: float) -> float:
    """Clearings as dashed lines between steps, cut answers as crosses, refused prompts with their size.

    Returns the highest point marked, so the axis can make room for it."""
    events = run.events or []
    for clearing in (e for e in events if is_clearing(e)):
        # after a threshold clearing the next step starts; after a 400 the same step is asked again
        offset = -0.5 if clearing.get("reason") == "context_400" else 0.5
        ax.axvline((_int(clearing.get("step")) or 0) + offset, color=COLOURS["clearing"], linestyle="--", linewidth=1)
    cuts = [_int(e.get("step")) or 0 for e in events if e.get("event") == "cut"]
    ax.scatter(cuts, [totals.get(s, ctx) for s in cuts], marker="X", s=60, color=COLOURS["cut"], zorder=3)
    refused = [(_int(e.get("step")) or 0, _int(e.get("n_prompt_tokens"))) for e in events if _is_context_400(e)]
    for step, size in refused:
        y = size if size is not None else ctx
        ax.scatter([step], [y], marker="v", s=50, color="black", zorder=3)
        ax.annotate(fmt_number(size), (step, y), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7)
    return max([y or ctx for _, y in refused], default=0)


def _is_context_400(event: Event) -> bool:
    return event.get("event") == "http_error" and event.get("type") == "exceed_context_size_error"


def plot_share(ax: Axes, run: Run) -> None:
    ax.set_ylabel("prompt processed anew")
    known = [r for r in run.requests if r.share_anew is not None]
    if not known:
        _no_data(ax, run.missing if run.events is None else "no timings")
        return
    ax.set_ylim(0, 1.05)
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    colours = [COLOURS["after"] if r.after_clearing else COLOURS["other"] for r in known]
    ax.bar([r.step for r in known], [r.share_anew or 0 for r in known], color=colours)
    ax.set_xlabel("step")


def _no_data(ax: Axes, text: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


def plot_outcomes(groups: list[tuple[str, list[Run]]], path: Path) -> None:
    """Per group a bar split by stop reason, with how many runs completed written beside it."""
    fig = Figure(figsize=(8, 1.2 + 0.6 * len(groups)), layout="constrained")
    ax = fig.add_subplot()
    titles = [title for title, _ in groups]
    reasons = list(dict.fromkeys(r.row["stop_reason"] or "n/a" for _, runs in groups for r in runs))
    left = [0] * len(groups)
    for reason in reasons:
        counts = [sum((r.row["stop_reason"] or "n/a") == reason for r in runs) for _, runs in groups]
        ax.barh(titles, counts, left=left, color=STOP_COLOURS.get(reason, "#bbbbbb"), label=reason)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    for y, (_, runs) in enumerate(groups):
        done = sum(is_completed(r.row) for r in runs)
        ax.text(len(runs) + 0.1, y, f"completed {done} of {len(runs)}", va="center", fontsize=8)
    ax.set_xlim(0, max(len(runs) for _, runs in groups) * 1.4)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_xlabel("runs")
    fig.legend(loc="outside right upper", fontsize=8, title="stop reason", title_fontsize=8)
    fig.savefig(path, dpi=90)


def measured_servers(groups: list[tuple[str, list[Run]]]) -> list[str]:
    rows = [run.row for _, runs in groups for run in runs]
    return [name for name, column in GPU_COLUMNS.items() if measured(rows, column)]


def plot_gpu(groups: list[tuple[str, list[Run]]], path: Path) -> None:
    """Median peak MiB per server and group, written on the bar; the whisker spans min to max."""
    fig = Figure(figsize=(8, 3.8), layout="constrained")
    ax = fig.add_subplot()
    servers = measured_servers(groups)
    width = 0.8 / len(servers)
    for i, name in enumerate(servers):
        stats = [spread(measured([r.row for r in runs], GPU_COLUMNS[name])) for _, runs in groups]
        xs = [g + i * width for g, s in enumerate(stats) if s]
        medians = [s.median for s in stats if s]
        errors = [[s.median - s.low for s in stats if s], [s.high - s.median for s in stats if s]]
        bars = ax.bar(xs, medians, width, yerr=errors, capsize=3, label=name)
        ax.bar_label(bars, [fmt_number(m) for m in medians], fontsize=7, padding=2)
    ax.set_xticks([g + (len(servers) - 1) * width / 2 for g in range(len(groups))], [t for t, _ in groups], fontsize=8)
    ax.set_ylabel("peak GPU memory (MiB)")
    ax.margins(y=0.12)
    fig.legend(loc="outside right upper", fontsize=8)
    fig.savefig(path, dpi=90)


# ---- the command ------------------------------------------------------------------------------------------------


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "group"


def write_report(csv_path: Path, out_dir: Path) -> Path:
    """Write report.md and its PNGs into out_dir; returns the markdown file."""
    rows = read_runs(csv_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    keyed = group_rows(rows)
    shown = varying_columns(list(keyed))
    runs_dir = csv_path.parent / "runs"
    groups = [(group_title(key, shown), [load_run(row, runs_dir) for row in group]) for key, group in keyed.items()]
    constant = constant_columns(list(keyed))
    out = [f"# Bench report: {csv_path.name}", "", f"{len(rows)} runs in {len(groups)} groups."]
    out += [f"Same in every group: {', '.join(constant)}."] if constant else []
    out += ["Completed = stopped with done and every hidden test passed. Values: median [min–max].", ""]
    out += ["## Overview", "", overview_table(groups), ""]
    plot_outcomes(groups, out_dir / "outcomes.png")
    out += ["![completion and stop reasons per group](outcomes.png)", ""]
    out += _gpu_section(groups, rows, out_dir)
    for index, (title, runs) in enumerate(groups, start=1):
        figure = f"group-{index}-{slug(title)}.png"
        plot_group(runs, title, out_dir / figure)
        out += group_section(title, runs, figure)
    report = out_dir / "report.md"
    report.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    return report


def _gpu_section(groups: list[tuple[str, list[Run]]], rows: list[Row], out_dir: Path) -> list[str]:
    out = ["## Peak GPU memory", ""]
    if not any(measured(rows, column) for column in GPU_COLUMNS.values()):
        methods = "; ".join(sorted({row.get("gpu_mem_method", "") or "n/a" for row in rows}))
        return [*out, f"Not measured in any run (gpu_mem_method: {methods}).", ""]
    plot_gpu(groups, out_dir / "gpu-memory.png")
    return [*out, gpu_table(groups), "", "![peak GPU memory per server and group](gpu-memory.png)", ""]


def command(args: argparse.Namespace) -> int:
    csv_path = Path(args.file)
    report = write_report(csv_path, Path(args.out_dir) if args.out_dir else csv_path.parent)
    print(f"wrote {report} and its plots")
    return 0
