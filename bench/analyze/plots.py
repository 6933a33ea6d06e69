"""The report's PNG figures: per group, window fill and prompt processed anew for each run; across groups,
completion and stop reasons, and peak GPU memory per server.

Figures are bare matplotlib Figures rendered with Agg: nothing opens a window, so the report runs headless.
"""

from __future__ import annotations

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


def plot_outcomes(groups: Groups, path: Path) -> None:
    """Per group a bar split by stop reason, with how many runs completed written beside it."""
    fig = Figure(figsize=(8, 1.2 + 0.6 * len(groups)), layout="constrained")
    ax = fig.add_subplot()
    titles = [title for title, _ in groups]
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


def measured_servers(groups: Groups) -> list[str]:
    """The servers (and the device) whose peak GPU memory some run measured."""
    rows = [run.row for _, runs in groups for run in runs]
    return [name for name, column in GPU_COLUMNS.items() if measured(rows, column)]


def plot_gpu(groups: Groups, path: Path) -> None:
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
