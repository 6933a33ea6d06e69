"""The history figure of one configuration: a panel per metric, each run as a dot, the nightly median as a line,
and each change point as a dashed line before the first night of the new regime, labelled with its date."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from bench.analyze.changes import values_of
from bench.analyze.nights import Night, Series
from bench.results.read import is_completed

COLOURS = {"run": "#9cc3e6", "median": "#3d6fb6", "shift": "#d1495b"}


def plot_series(series: Sequence[Series], nights: Sequence[Night], title: str, path: str | Path) -> None:
    fig = Figure(figsize=(10, 1.4 + 2.3 * len(series)), layout="constrained")
    axes = fig.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]
    for ax, one in zip(axes, series, strict=True):
        completed = one.metric == "completed"
        for i, night in enumerate(nights):
            runs = [float(is_completed(row)) for row in night.agent_rows] if completed else None
            values = runs if completed else values_of(night.agent_rows, one.metric)[0]
            ax.scatter([i] * len(values or []), values or [], s=12, color=COLOURS["run"], zorder=2)
        xs, ys = [x for x, _ in one.points], [y for _, y in one.points]
        ax.plot(xs, ys, color=COLOURS["median"], marker="o", markersize=3, linewidth=1.4, zorder=3)
        for shift in one.shifts:
            start = one.points[shift][0]
            ax.axvline(start - 0.5, color=COLOURS["shift"], linestyle="--", linewidth=1.2)
            ax.annotate(
                nights[start].date,
                (start - 0.5, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(3, -10),
                textcoords="offset points",
                fontsize=7,
                color=COLOURS["shift"],
            )
        ax.set_ylabel("completed share" if completed else one.metric, fontsize=8)
        if completed:
            ax.set_ylim(-0.05, 1.05)
        else:
            ax.set_ylim(
                bottom=0, top=max([*ys, *(v for n in nights for v in values_of(n.agent_rows, one.metric)[0])]) * 1.15
            )
    step = max(1, len(nights) // 15)
    axes[-1].set_xticks(range(0, len(nights), step))
    axes[-1].set_xticklabels([f"{n.date[5:]}\n{n.version}" for n in nights][::step], fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.legend(handles=_legend(), loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.savefig(path, dpi=90)


def _legend() -> list[Line2D]:
    return [
        Line2D([], [], color=COLOURS["run"], marker="o", linestyle="", label="one run"),
        Line2D([], [], color=COLOURS["median"], marker="o", markersize=3, label="median of the night"),
        Line2D([], [], color=COLOURS["shift"], linestyle="--", label="change point (E-Divisive)"),
    ]
