"""The report's PNG figures: per group, window fill and prompt processed anew for each run; across groups,
completion and stop reasons, and peak GPU memory per server.

Figures are bare matplotlib Figures rendered with Agg: nothing opens a window, so the report runs headless.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from bench.analyze.runs import Run
from bench.analyze.table import fmt_completed, fmt_number, spread
from bench.measure.trace import int_field, is_clearing, is_context_400
from bench.results.read import measured

Groups = list[tuple[str, list[Run]]]  # (group title, its runs), in report order

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
RUNS_DRAWN = 8  # a group with more runs is drawn as one summary of all of them: the figure's size stays bounded
LABEL_CHARS = 38  # a label longer than this is wrapped onto more lines, so that no label is ever cut off
MAX_HEIGHT_IN, MAX_WIDTH_IN = 30.0, 30.0  # at dpi 90: at most 2,700 px either way, however many groups


def label(text: str) -> str:
    """A group title wrapped at its separators (`·`), so the figure can make room for all of it."""
    lines, line = [], ""
    for part in text.split(" · "):
        if line and len(line) + 3 + len(part) > LABEL_CHARS:
            lines.append(line)
            line = part
        else:
            line = f"{line} · {part}" if line else part
    return "\n".join([*lines, line])


def plot_group(runs: list[Run], title: str, path: Path) -> None:
    """Per run: window fill per step above, share of the prompt processed anew below; one legend for all. A group of
    more than RUNS_DRAWN runs is summarised instead (plot_summary): its runs are in the report's table."""
    if len(runs) > RUNS_DRAWN:
        plot_summary(runs, title, path)
        return
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
    fig.suptitle(label(title))
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncols=4, fontsize=8, frameon=False)
    fig.savefig(path, dpi=90)


def plot_summary(runs: list[Run], title: str, path: Path) -> None:
    """All runs of a large group in two panels of a fixed size: per step, the median window fill with its range
    over the runs (and the window), and every request's share processed anew (after a clearing or not)."""
    fig = Figure(figsize=(9.0, 7.0), layout="constrained")
    fill, share = fig.add_subplot(2, 1, 1), fig.add_subplot(2, 1, 2, sharex=None)
    per_step: dict[int, list[int]] = {}
    for run in runs:
        for request in run.requests:
            per_step.setdefault(request.step, []).append(
                (request.prompt_tokens or 0) + (request.completion_tokens or 0)
            )
    steps = sorted(per_step)
    if steps:
        values = [per_step[step] for step in steps]
        fill.fill_between(steps, [min(v) for v in values], [max(v) for v in values], color=COLOURS["answer"])
        fill.plot(steps, [statistics.median(v) for v in values], color=COLOURS["prompt"])
    windows = {run.row.ctx for run in runs if run.row.ctx}
    for ctx in windows:
        fill.axhline(ctx, color=COLOURS["ctx"], linewidth=1.2)
    fill.set_title(f"{len(runs)} runs: tokens in the window per step", fontsize=10)
    fill.set_ylabel("tokens in the window")
    fill.xaxis.set_major_locator(MaxNLocator(integer=True))
    known = [r for run in runs for r in run.requests if r.share_anew is not None]
    for after, colour in ((False, COLOURS["other"]), (True, COLOURS["after"])):
        chosen = [r for r in known if r.after_clearing == after]
        share.scatter([r.step for r in chosen], [r.share_anew or 0.0 for r in chosen], s=8, color=colour, alpha=0.5)
    share.set_ylim(0, 1.05)
    share.set_ylabel("prompt processed anew")
    share.set_xlabel("step")
    share.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(label(title))
    handles = [
        *_legend_handles()[:3],
        Patch(color=COLOURS["after"], label="request right after a clearing"),
        Patch(color=COLOURS["other"], label="other request"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
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
    ctx = run.row.ctx
    ax.set_title(f"{run.name}: {run.row.stop_reason or 'n/a'}", fontsize=10)
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
        step = int_field(clearing.get("step")) or 0
        ax.axvline(step + offset, color=COLOURS["clearing"], linestyle="--", linewidth=1)
    cuts = [int_field(e.get("step")) or 0 for e in events if e.get("event") == "cut"]
    ax.scatter(cuts, [totals.get(s, ctx) for s in cuts], marker="X", s=60, color=COLOURS["cut"], zorder=3)
    refused = [
        (int_field(e.get("step")) or 0, int_field(e.get("n_prompt_tokens"))) for e in events if is_context_400(e)
    ]
    for step, size in refused:
        y = size if size is not None else ctx
        ax.scatter([step], [y], marker="v", s=50, color="black", zorder=3)
        ax.annotate(fmt_number(size), (step, y), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7)
    return max([y or ctx for _, y in refused], default=0)


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


def plot_outcomes(groups: Groups, path: Path) -> Figure:
    """Per group a bar split by stop reason, with how many runs completed written beside it."""
    titles = [label(title) for title, _ in groups]
    lines = sum(title.count("\n") + 1 for title in titles)
    fig = Figure(figsize=(10, min(1.6 + 0.35 * lines + 0.25 * len(groups), MAX_HEIGHT_IN)), layout="constrained")
    ax = fig.add_subplot()
    ax.tick_params(axis="y", labelsize=8 if len(groups) < 30 else 6)
    reasons = list(dict.fromkeys(r.row.stop_reason or "n/a" for _, runs in groups for r in runs))
    left = [0] * len(groups)
    for reason in reasons:
        counts = [sum((r.row.stop_reason or "n/a") == reason for r in runs) for _, runs in groups]
        ax.barh(titles, counts, left=left, color=STOP_COLOURS.get(reason, "#bbbbbb"), label=reason)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    for y, (_, runs) in enumerate(groups):
        completed = fmt_completed([r.row for r in runs])
        ax.text(len(runs) + 0.1, y, f"completed {completed}", va="center", fontsize=8)
    ax.set_xlim(0, max(len(runs) for _, runs in groups) * 1.4)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_xlabel("runs")
    fig.legend(loc="outside right upper", fontsize=8, title="stop reason", title_fontsize=8)
    fig.savefig(path, dpi=90)
    return fig


def measured_servers(groups: Groups) -> list[str]:
    """The servers (and the device) whose peak GPU memory some run measured."""
    rows = [run.row for _, runs in groups for run in runs]
    return [name for name, column in GPU_COLUMNS.items() if measured(rows, column)]


def plot_gpu(groups: Groups, path: Path) -> None:
    """Median peak MiB per server and group, written on the bar; the whisker spans min to max."""
    lines = max((label(t).count("\n") + 1 for t, _ in groups), default=1)
    fig = Figure(figsize=(min(max(8.0, 1.6 * len(groups)), MAX_WIDTH_IN), 3.4 + 0.25 * lines), layout="constrained")
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
    ticks = [label(t) for t, _ in groups]
    ax.set_xticks([g + (len(servers) - 1) * width / 2 for g in range(len(groups))], ticks, fontsize=7)
    ax.set_ylabel("peak GPU memory (MiB)")
    ax.margins(y=0.12)
    fig.legend(loc="outside right upper", fontsize=8)
    fig.savefig(path, dpi=90)
