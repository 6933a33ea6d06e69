"""The report's section on where each group's time and reprocessed tokens went: per run the wall time split (Flint,
Jeff, tools, the servers' stalls, the harness's own) with the hardware's floor, the reprocessed tokens by cause, and
one figure of the causes stacked per step for every run (from each run's reprocessed.json, bench/run/extras.py).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bench.analyze.runs import Run
from bench.analyze.table import count_values, fmt_cell, fmt_number, fmt_percent, markdown_table
from bench.results.read import measured
from bench.results.row import ResultRow

SPLIT_FILE = "reprocessed.json"
CAUSE_COLOURS = {
    "cold": "#7f7f7f",
    "new": "#9cc3e6",
    "answer": "#e9a23b",
    "clearing": "#d1495b",
    "summary": "#3d8b5f",
    "template": "#8c3b9e",
    "unexplained": "#3b3b3b",
    "truncation": "#b5651d",
    "side": "#2a9d8f",
}
# bench/measure/reprocessing.py's; the last two only other agents than the article's have (bench/measure/proxy_split.py)
CAUSES = ("cold", "new", "answer", "clearing", "summary", "template", "unexplained", "truncation", "side")
OTHER_AGENTS_CAUSES = ("truncation", "side")
CAUSE_COLUMNS = {
    "cold": "reprocessed_cold",
    "new": "reprocessed_new",
    "answer": "reprocessed_answer",
    "clearing": "reprocessed_by_clearing",
    "summary": "reprocessed_by_summary",
    "template": "reprocessed_by_template",
    "unexplained": "reprocessed_unexplained",
    "truncation": "reprocessed_by_truncation",
    "side": "reprocessed_by_side",
}
# The time table's columns: the parts of the split (bench/measure/time_split.py TIME_PARTS) between the wall time
# and the floor, Flint's time also as its prefill and decode, and the model time beyond llama-bench's floor:
# (column, heading).
TIME_COLUMNS = (
    ("wall_s", "wall s"),
    ("flint_model_s", "Flint s"),
    ("flint_prompt_s", "prefill s"),
    ("flint_gen_s", "decode s"),
    ("jeff_model_s", "Jeff s"),
    ("tools_s", "tools s"),
    ("server_stall_s", "stalled s"),
    ("own_s", "own s"),
    ("floor_s", "floor s"),
    ("server_overhead_s", "overhead s"),
)
MAX_RUNS_SHOWN = 8  # a larger group is summarised: one line of medians, and one panel of all its runs per step


def load_split(run_dir: Path) -> list[dict[str, Any]] | None:
    """The per-request split a bench wrote for the run; None when there is none (or it was not measured)."""
    try:
        data = json.loads((run_dir / SPLIT_FILE).read_text())
    except (OSError, ValueError):
        return None
    requests = data.get("requests") if isinstance(data, dict) else None
    return requests if isinstance(requests, list) and requests else None


def shown_causes(rows: list[ResultRow]) -> list[str]:
    """The causes a group's table shows: all but the ones only other agents have, unless some run measured them."""
    return [c for c in CAUSES if c not in OTHER_AGENTS_CAUSES or measured(rows, CAUSE_COLUMNS[c])]


def cause_table(runs: list[Run]) -> str:
    rows = [run.row for run in runs]
    causes = shown_causes(rows)
    headers = ["run", *causes, "split"]
    if len(runs) > MAX_RUNS_SHOWN:
        line = [f"median of {len(runs)}", *(fmt_median(rows, CAUSE_COLUMNS[c]) for c in causes)]
        return markdown_table(headers, [[*line, count_values(r.reprocessed_split or "—" for r in rows)]])
    lines = [
        [run.name, *(fmt_cell(run.row, CAUSE_COLUMNS[c]) for c in causes), run.row.reprocessed_split or "—"]
        for run in runs
    ]
    return markdown_table(headers, lines)


def time_table(runs: list[Run]) -> str:
    headers = ["run", *(heading for _, heading in TIME_COLUMNS), "efficiency"]
    if len(runs) > MAX_RUNS_SHOWN:
        rows = [run.row for run in runs]
        shares = measured(rows, "efficiency")
        shown = fmt_percent(float(statistics.median(shares))) if shares else "n/a"
        line = [f"median of {len(runs)}", *(fmt_median(rows, c) for c, _ in TIME_COLUMNS), shown]
        return markdown_table(headers, [line])
    lines = []
    for run in runs:
        efficiency = run.row.efficiency
        shown = fmt_percent(efficiency) if efficiency is not None else "n/a"
        lines.append([run.name, *(fmt_cell(run.row, c) for c, _ in TIME_COLUMNS), shown])
    return markdown_table(headers, lines)


def fmt_median(rows: list[ResultRow], column: str) -> str:
    values = measured(rows, column)
    return fmt_number(statistics.median(values)) if values else "n/a"


def plot_causes(runs: list[Run], runs_dir: Path, title: str, path: Path) -> bool:
    """One panel per run (one for all of a large group's runs, summed per step): per step, the tokens computed anew
    stacked by cause. False when no run has a split."""
    splits = [(run.name, load_split(runs_dir / run.row.run_id)) for run in runs]
    shown = [(name, split) for name, split in splits if split]
    if not shown:
        return False
    if len(shown) > MAX_RUNS_SHOWN:
        shown = [(f"all {len(shown)} runs, summed per step", _summed([split for _, split in shown]))]
    fig = Figure(figsize=(max(4.2 * min(len(shown), 4), 9.0), 1.2 + 3.2 * -(-len(shown) // 4)), layout="constrained")
    for i, (name, split) in enumerate(shown):
        ax = fig.add_subplot(-(-len(shown) // 4), min(len(shown), 4), i + 1)
        steps = [int(r.get("step") or n + 1) for n, r in enumerate(split or [])]
        bottom = [0] * len(steps)
        for cause in CAUSES:
            values = [int(r.get(cause) or 0) for r in split or []]
            ax.bar(steps, values, bottom=bottom, color=CAUSE_COLOURS[cause], label=cause)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel("tokens computed anew")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(CAUSES), fontsize=8, frameon=False)
    fig.suptitle(f"{title}: tokens computed anew, by cause")
    fig.savefig(path, dpi=90)
    return True


def _summed(splits: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    steps: dict[int, dict[str, Any]] = {}
    for split in splits:
        for n, request in enumerate(split):
            step = int(request.get("step") or n + 1)
            total = steps.setdefault(step, {"step": step})
            for cause in CAUSES:
                total[cause] = int(total.get(cause) or 0) + int(request.get(cause) or 0)
    return [steps[step] for step in sorted(steps)]


def causes_section(runs: list[Run], runs_dir: Path, title: str, out_dir: Path, figure: str) -> list[str]:
    """The report's lines for one group: both tables and, where any run has a split, the figure."""
    out = [
        "Time per run (wall = Flint + Jeff + tools + stalled + own; Flint = its prefill + decode; stalled: the "
        "servers not computing; floor: the run's tokens at llama-bench's speeds, or the servers' own where "
        "llama-bench did not run; overhead: model time beyond llama-bench's floor):",
        "",
    ]
    out += [time_table(runs), "", "Tokens computed anew, by cause (they add up to the reprocessed tokens):", ""]
    out += [cause_table(runs), ""]
    if plot_causes(runs, runs_dir, title, out_dir / figure):
        out += [f"![tokens computed anew by cause, {title}]({figure})", ""]
    return out
