"""The report's answer to "how small a window can this agent work in": per agent and model, from a ctx sweep, the
smallest window at which every one of its runs completed (stopped done, every hidden test passed), and what that
window cost: Flint's peak GPU memory and the reprocessed tokens; then, per window, its completions, reprocessed tokens
and first prompt; and one figure of completion and reprocessed tokens against the window, one line per agent.

Shown where some agent ran at two windows or more. An agent is named with its preset where it has one
(`article·part3`); reprocessed tokens the server's /metrics counter did not confirm are left out of medians.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from matplotlib.figure import Figure

from bench.analyze.table import agent_runs, fmt_number, markdown_table
from bench.results.read import is_completed, measured
from bench.results.row import ResultRow

FIGURE = "windows.png"
Line = tuple[str, str]  # (agent, Flint's model)


def agent_name(row: ResultRow) -> str:
    return f"{row.agent or 'article'}·{row.preset}" if row.preset else row.agent


def by_window(rows: list[ResultRow]) -> dict[Line, dict[int, list[ResultRow]]]:
    """The agent's runs (not infra_error ones) by agent and model, then by window."""
    found: dict[Line, dict[int, list[ResultRow]]] = defaultdict(lambda: defaultdict(list))
    for row in agent_runs(rows):
        if row.ctx is not None:
            found[(agent_name(row), row.flint_model)][row.ctx].append(row)
    return found


def confirmed(rows: list[ResultRow]) -> list[ResultRow]:
    return [row for row in rows if row.reprocessed_check == "ok"]


def median(rows: list[ResultRow], column: str) -> float | None:
    values = measured(rows, column)
    return statistics.median(values) if values else None


def smallest_window(windows: dict[int, list[ResultRow]]) -> int | None:
    """The smallest window at which every run completed; None when none did."""
    return next((ctx for ctx in sorted(windows) if all(is_completed(row) for row in windows[ctx])), None)


def windows_section(rows: list[ResultRow], out_dir: Path) -> list[str]:
    """The report's lines; none when no agent ran at two windows."""
    lines = {line: windows for line, windows in by_window(rows).items() if len(windows) > 1}
    if not lines:
        return []
    smallest, sweep = [], []
    for (agent, model), windows in sorted(lines.items()):
        ctx = smallest_window(windows)
        at = windows.get(ctx, []) if ctx is not None else []
        cost = [
            fmt_number(median(at, "peak_gpu_mib_flint")),
            fmt_number(median(confirmed(at), "prompt_tokens_reprocessed")),
        ]
        smallest.append([agent, model, str(ctx) if ctx is not None else "none", *(cost if at else ["—", "—"])])
        for window, runs in sorted(windows.items()):
            done = f"{sum(is_completed(row) for row in runs)} of {len(runs)}"
            figures = (median(confirmed(runs), "prompt_tokens_reprocessed"), median(runs, "first_prompt_tokens"))
            sweep.append([agent, model, str(window), done, *(fmt_number(value) for value in figures)])
    plot_windows(lines, out_dir / FIGURE)
    heads = ["agent", "model", "smallest window", "peak GPU MiB (Flint)", "reprocessed tokens"]
    out = ["## The smallest window", "", "Per agent and model: the smallest window at which every run completed."]
    out += ["", markdown_table(heads, smallest), ""]
    out += [markdown_table(["agent", "model", "ctx", "completed", "reprocessed tokens", "first prompt tokens"], sweep)]
    return [*out, "", f"![completion and reprocessed tokens against the window]({FIGURE})", ""]


def plot_windows(lines: dict[Line, dict[int, list[ResultRow]]], path: Path) -> None:
    """Two panels against ctx, one line per agent and model: the share of runs completed, the reprocessed tokens."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    completion, reprocessed = fig.subplots(1, 2)
    for (agent, model), windows in sorted(lines.items()):
        ctxs = sorted(windows)
        share = [sum(is_completed(row) for row in windows[c]) / len(windows[c]) for c in ctxs]
        completion.plot(ctxs, share, marker="o", label=f"{agent} ({model})")
        tokens = [(c, median(confirmed(windows[c]), "prompt_tokens_reprocessed")) for c in ctxs]
        reprocessed.plot([c for c, t in tokens if t is not None], [t for _, t in tokens if t is not None], marker="o")
    for axes, title in ((completion, "runs completed"), (reprocessed, "reprocessed tokens (median)")):
        axes.set_xscale("log", base=2)
        axes.set_xlabel("ctx (tokens)")
        axes.set_title(title, fontsize=10)
    completion.set_ylim(-0.05, 1.05)
    fig.legend(loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.savefig(path, dpi=100)
