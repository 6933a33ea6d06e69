"""`python -m bench report RESULTS.csv`: a markdown report with PNG plots, written beside the CSV (or --out-dir).

For each configuration (group) the report has the article's per-run table (hidden tests, clearings, reprocessed
tokens, wall time, stop reason, failure labels), the failure labels counted, how much of each prompt the server
processed anew right after a clearing and otherwise, and one figure: per run, the window fill per step and the
share of each prompt processed anew. Two more figures cover all groups: completion and stop reasons, and peak
GPU memory per server. Traces are read from `<CSV dir>/runs/<run_id>/events.jsonl`; a run without one keeps
its row in the tables and gets a note. This module writes the markdown; bench.analyze.plots draws the figures and
bench.analyze.runs reads the traces.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench.analyze.causes import causes_section
from bench.analyze.changes import CONFIRMED, fmt_metric
from bench.analyze.clearings import clearings_section
from bench.analyze.energy import LABEL as ENERGY_LABEL
from bench.analyze.energy import fmt_energy_per_completed, measured_energy
from bench.analyze.plots import (
    GPU_COLUMNS,
    RUNS_DRAWN,
    Groups,
    measured_servers,
    plot_gpu,
    plot_group,
    plot_outcomes,
)
from bench.analyze.report_json import group_figure, report_document
from bench.analyze.runs import Run, load_run
from bench.analyze.table import (
    agent_runs,
    constant_columns,
    fmt_cell,
    fmt_completed,
    fmt_measured,
    fmt_percent,
    fmt_values,
    group_rows,
    group_title,
    infra_errors,
    markdown_table,
    slug,
    stop_reasons,
    varying_columns,
)
from bench.analyze.windows import windows_section
from bench.results.read import measured, read_runs
from bench.results.row import ResultRow

log = logging.getLogger(__name__)


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
        hidden = f"{fmt_cell(row, 'hidden_passed')} of {fmt_cell(row, 'hidden_total')}"
        counts = [fmt_cell(row, c) for c in ("clearings", "cut_answers", "context_400s")]
        counts.append(reprocessed_cell(row))
        tail = [fmt_cell(row, "max_request_tokens"), fmt_cell(row, "wall_s"), row.stop_reason or "n/a"]
        lines.append([run.name, row.run_id, hidden, *counts, *tail, ", ".join(row.failure_labels) or "—"])
    return markdown_table(headers, lines)


def reprocessed_cell(row: ResultRow) -> str:
    """`4,300`, or `4,300 (mismatch)` when the server's own counter did not confirm the figure."""
    check = row.reprocessed_check
    value = fmt_cell(row, "prompt_tokens_reprocessed")
    return f"{value} ({check})" if check not in CONFIRMED else value


def overview_table(groups: Groups) -> str:
    """Per group: the agent's runs and their figures; infra_error runs only counted, in a column of their own."""
    infra = any(infra_errors(run.row for run in runs) for _, runs in groups)
    headers = ["group", "runs", *(["infra_error runs"] if infra else []), "completed", "hidden passed"]
    headers += ["stop reasons", "wall_s", "reprocessed tokens"]
    lines = []
    for title, runs in groups:
        rows = agent_runs(run.row for run in runs)
        spreads = [fmt_measured(rows, "wall_s"), fmt_metric(rows, "prompt_tokens_reprocessed")]
        hidden = fmt_values(rows, "hidden_passed")
        failed = [str(infra_errors(run.row for run in runs))] if infra else []
        lines.append([title, str(len(rows)), *failed, fmt_completed(rows), hidden, stop_reasons(rows), *spreads])
    return markdown_table(headers, lines)


def gpu_table(groups: Groups) -> str:
    """Per group: each server's peak memory and, where any run measured its energy, the joules per completed run."""
    servers = measured_servers(groups)
    energy = measured_energy([run.row for _, runs in groups for run in runs])
    lines = [
        [
            title,
            *(fmt_measured(agent_runs(r.row for r in runs), GPU_COLUMNS[name]) for name in servers),
            *([fmt_energy_per_completed([r.row for r in runs])] if energy else []),
        ]
        for title, runs in groups
    ]
    return markdown_table(
        ["group", *(f"peak MiB, {name}" for name in servers), *([ENERGY_LABEL] if energy else [])], lines
    )


RUNS_PER_PAGE = 50  # a larger group's runs table goes to pages of its own, linked from the report


def runs_pages(runs: list[Run], stem: str, out_dir: Path) -> list[str]:
    """The group's runs table in the report, or, for a group larger than the summary threshold, in pages of
    RUNS_PER_PAGE runs beside it (`<stem>-runs-1.md`, ...), with links."""
    if len(runs) <= RUNS_DRAWN:
        return [run_table(runs), ""]
    links = []
    for page, start in enumerate(range(0, len(runs), RUNS_PER_PAGE), start=1):
        chunk = runs[start : start + RUNS_PER_PAGE]
        name = f"{stem}-runs-{page}.md"
        (out_dir / name).write_text(
            f"# Runs {start + 1}–{start + len(chunk)}\n\n{run_table(chunk)}\n", encoding="utf-8"
        )
        links.append(f"[runs {start + 1}–{start + len(chunk)}]({name})")
    return [f"{len(runs)} runs, summarised in the figure below; each run's numbers: {', '.join(links)}.", ""]


def group_section(title: str, runs: list[Run], figure: str, out_dir: Path | None = None) -> list[str]:
    rows = [run.row for run in runs]
    label_counts = Counter(label for row in rows for label in row.failure_labels)
    labels = ", ".join(f"{label} {count}" for label, count in sorted(label_counts.items())) or "none"
    completed = f"Completed {fmt_completed(rows)}"
    hidden = fmt_values(agent_runs(rows), "hidden_passed")
    failed = infra_errors(rows)
    infra = f" {failed} infra_error run(s) measured nothing about the agent and are left out." if failed else ""
    out = [f"## {title}", "", f"{completed}; hidden tests passed per run: {hidden}.{infra}", ""]
    stem = figure.removesuffix(".png")
    out += runs_pages(runs, stem, out_dir) if out_dir is not None else [run_table(runs), ""]
    out += [f"Failure labels: {labels}.", "", cache_summary(runs), ""]
    out += [f"![window fill and prompt processed anew, {title}]({figure})", ""]
    noted = [run for run in runs if run.note]
    out += [f"- {run.name} ({run.row.run_id}): {run.note}; its plots are empty." for run in noted[:RUNS_DRAWN]]
    if len(noted) > RUNS_DRAWN:
        out.append(f"- and {len(noted) - RUNS_DRAWN} more runs without a usable trace (their rows say why).")
    return out + ([""] if noted else [])


def write_report(csv_path: Path, out_dir: Path, skip_bad_rows: bool = False) -> Path:
    """Write report.md and its PNGs into out_dir; returns the markdown file."""
    return written_report(csv_path, out_dir, skip_bad_rows)[0]


def written_report(csv_path: Path, out_dir: Path, skip_bad_rows: bool = False) -> tuple[Path, dict[str, Any]]:
    """Write report.md and its PNGs into out_dir; returns the markdown file and the report as a JSON document."""
    rows = read_runs(csv_path, skip_bad_rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    keyed = group_rows(rows)
    shown = varying_columns(list(keyed))
    runs_dir = csv_path.parent / "runs"
    # rows only until a group's section: its runs' traces are read then and let go after (10,000 traces at once
    # would hold hundreds of MiB)
    groups = [(group_title(key, shown), [Run(row, None) for row in group]) for key, group in keyed.items()]
    constant = constant_columns(list(keyed))
    out = [f"# Bench report: {csv_path.name}", "", f"{len(rows)} runs in {len(groups)} groups."]
    out += [f"Same in every group: {', '.join(constant)}."] if constant else []
    out += ["Completed = stopped with done and every hidden test passed. Values: median [min–max] over the agent's"]
    out += ["runs (infra_error runs are counted apart). A reprocessed token count the server's /metrics counter did"]
    out += ["not confirm (reprocessed_check mismatch, counter_reset, unchecked) is marked and left out of medians.", ""]
    out += ["## Overview", "", overview_table(groups), ""]
    plot_outcomes(groups, out_dir / "outcomes.png")
    out += ["![completion and stop reasons per group](outcomes.png)", ""]
    out += _gpu_section(groups, rows, out_dir)
    out += windows_section(rows, out_dir)
    for index, (title, rows_only) in enumerate(groups, start=1):
        runs = [load_run(run.row, runs_dir) for run in rows_only]
        figure = group_figure(index, title)
        plot_group(runs, title, out_dir / figure)
        out += group_section(title, runs, figure, out_dir)
        out += causes_section(
            runs=runs, runs_dir=runs_dir, title=title, out_dir=out_dir, figure=f"causes-{index}-{slug(title)}.png"
        )
        out += clearings_section(runs, runs_dir)
        groups[index - 1] = (title, [run.untraced() for run in runs])
    report = out_dir / "report.md"
    report.write_text("\n".join(out).rstrip() + "\n", encoding="utf-8")
    return report, report_document(csv_path=csv_path, report=report, rows=rows, groups=groups, constant=constant)


def _gpu_section(groups: Groups, rows: list[ResultRow], out_dir: Path) -> list[str]:
    out = ["## Peak GPU memory", ""]
    if not any(measured(rows, column) for column in GPU_COLUMNS.values()):
        methods = "; ".join(sorted({row.gpu_mem_method or "n/a" for row in rows}))
        return [*out, f"Not measured in any run (gpu_mem_method: {methods}).", ""]
    plot_gpu(groups, out_dir / "gpu-memory.png")
    return [*out, gpu_table(groups), "", "![peak GPU memory per server and group](gpu-memory.png)", ""]


def command(csv_path: Path, out_dir: Path | None = None, skip_bad_rows: bool = False, as_json: bool = False) -> int:
    """`bench report RESULTS.csv [--out-dir DIR] [--json]` (bench/cli/report.py)."""
    # Beside the CSV, in a folder of its own: several results files share results/ and their plots must not mix.
    report, found = written_report(csv_path, out_dir or csv_path.with_name(f"{csv_path.stem}-report"), skip_bad_rows)
    log.info("wrote %s and its plots", report)
    if as_json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
    return 0
