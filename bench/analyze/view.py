"""`python -m bench view RESULTS.csv... [--out report.html]`: one self-contained HTML page of a bench's results.

The page holds everything it shows (bench.analyze.view_page: the script, the styles, and the data as JSON), so it
opens from disk with no server and no network. Its first view is the matrix: per configuration (the groups of
`bench compare`, bench.analyze.matching) and file, the runs, completion, hidden tests passed, reprocessed tokens and
GPU peaks, and with two files or more each later file's verdicts against the first (bench.analyze.changes); the page
sorts, filters and searches them (bench.analyze.view_script). Each run opens a page of its own, step by step from its
trace and request log (`runs/<run_id>/` beside the CSV; bench.analyze.view_steps, bench.analyze.view_run): the
model's messages and calls, each tool's result, the window's fill, clearings and what they changed, cut answers,
400s, Jeff's opinions beside his commands, done checks; then each graded test with its message, and the run's diff.
Run-level numbers are the CSV's own cells, as written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

from bench.analyze import stats
from bench.analyze.by_setting import check_setting, families
from bench.analyze.changes import fmt_metric, metric_change
from bench.analyze.compare import SHOWN_METRICS, file_labels
from bench.analyze.matching import Group, match_files
from bench.analyze.runs import load_run
from bench.analyze.table import agent_runs, fmt_completed, fmt_values, stop_reasons
from bench.analyze.view_page import write_page
from bench.analyze.view_run import graded_tests, request_log_of, run_diff
from bench.analyze.view_steps import steps_of
from bench.errors import ConfigError
from bench.measure.request_log import RequestBodies
from bench.results.read import measured, read_runs
from bench.results.row import ResultRow

log = logging.getLogger(__name__)

# The run-level cells shown for each run, CSV text as written: (column, heading).
RUN_CELLS = [
    ("hidden_passed", "hidden passed"),
    ("hidden_total", "hidden total"),
    ("stop_reason", "stop"),
    ("steps", "steps"),
    ("clearings", "clearings"),
    ("cut_answers", "cut answers"),
    ("context_400s", "400s"),
    ("prompt_tokens_reprocessed", "reprocessed tokens"),
    ("max_request_tokens", "largest request"),
    ("wall_s", "wall s"),
    ("peak_gpu_mib_flint", "GPU peak MiB, Flint"),
    ("peak_gpu_mib_device", "GPU peak MiB, device"),
]


def group_cells(rows: list[ResultRow], metrics: list[str]) -> dict[str, str]:
    agent = agent_runs(rows)
    cells = {
        "runs": str(len(agent)),
        "completed": fmt_completed(agent),
        "hidden passed": fmt_values(agent, "hidden_passed"),
    }
    cells["stop reasons"] = stop_reasons(agent)
    cells.update({metric: fmt_metric(agent, metric) for metric in metrics})
    return cells


def verdicts(group: Group, labels: list[str], metrics: list[str], alpha: float) -> list[dict[str, Any]]:
    """Each later file against the first, per metric (completion first): the change, its p-value, the verdict."""
    found = []
    old = agent_runs(group.per_file[0])
    for label, rows in zip(labels[1:], group.per_file[1:], strict=True):
        new = agent_runs(rows)
        if not old or not new:
            continue
        for metric in ["completed", *metrics]:
            change = metric_change(metric, old, new, alpha)
            found.append(
                {
                    "against": f"{label} vs {labels[0]}",
                    "metric": metric,
                    "change": change.text,
                    "p": change.p_text(),
                    "verdict": change.verdict(alpha),
                }
            )
    return found


def run_page(row: ResultRow, csv_path: Path, label: str, group: str) -> dict[str, Any]:
    runs_dir = csv_path.parent / "runs"
    run, run_dir = load_run(row, runs_dir), runs_dir / row.run_id
    page: dict[str, Any] = {
        "id": row.run_id,
        "file": label,
        "group": group,
        "fixture": row.fixture,
        "preset": row.preset,
        "ctx": row.text("ctx"),
        "rep": row.text("rep"),
        "cells": {column: row.text(column) for column, _ in RUN_CELLS},
        "error": row.text("error"),
        "labels": list(row.failure_labels),
    }
    page["setup"] = setup_line(row)
    bodies, log_note = request_log_of(run_dir) if run.events else (None, "")
    page["system"], page["task"] = first_messages(bodies)
    page["note"] = "; ".join(note for note in (run.note, log_note) if note)
    page["steps"] = steps_of(run.events, row.ctx, bodies) if run.events else []
    stop = [e for e in run.events or [] if e.get("event") == "stop"]
    page["stop"] = f"{stop[-1].get('reason')}: {stop[-1].get('message') or ''}".rstrip(": ") if stop else ""
    page["tests"] = graded_tests(run_dir)
    page["diff"] = run_diff(run_dir)
    return page


def setup_line(row: ResultRow) -> str:
    """What produced the run: `model X (sha 0123abcd…) · build b4000 · flags -fa on · sampling {...}`."""
    sha = f" (sha256 {row.flint_model_sha256[:12]})" if row.flint_model_sha256 else ""
    parts = [
        f"model {row.flint_model or 'n/a'}{sha}",
        f"served {row.flint_serving}",
        f"build {row.server_build or 'n/a'}",
    ]
    parts += [f"flags {row.flint_server_args or 'none of yours'}", f"sampling {row.sampling or 'n/a'}"]
    return " · ".join(parts)


def first_messages(bodies: RequestBodies | None) -> tuple[str, str]:
    """The first request's system prompt and task (its first user message) as sent; "" where the log lacks them."""
    messages = bodies.bodies[0].get("messages", []) if bodies and bodies.bodies else []
    found = {"system": "", "user": ""}
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in found and not found[role] and isinstance(content, str):
            found[role] = content
    return found["system"], found["user"]


def view_data(
    files: Sequence[str], alpha: float = stats.ALPHA, skip_bad_rows: bool = False, by: str | None = None
) -> dict[str, Any]:
    """The page's data: per group its sides (files, or with `by` the values of that setting: compare --by's
    families, bench.analyze.by_setting), their verdicts, and every run's page."""
    tables = [read_runs(file, skip_bad_rows) for file in files]
    labels = file_labels(files)
    groups = families(tables, labels, by) if by else match_files(tables, labels)
    file_of = {id(row): file for file, table in zip(files, tables, strict=True) for row in table}
    label_of = dict(zip(files, labels, strict=True))
    all_rows = [row for table in tables for row in agent_runs(table)]
    metrics = [m for m in SHOWN_METRICS if measured(all_rows, m)]
    data: dict[str, Any] = {"files": labels, "metrics": metrics, "run_cells": RUN_CELLS, "groups": [], "runs": []}
    data["unmeasured"] = [m for m in SHOWN_METRICS if m not in metrics]
    for group in groups:
        sides = group.labels or labels
        per_file = [
            {"file": label, "cells": group_cells(rows, metrics), "runs": [r.run_id for r in rows]}
            for label, rows in zip(sides, group.per_file, strict=True)
        ]
        found = verdicts(group, sides, metrics, alpha) if len(sides) > 1 else []
        data["groups"].append({"heading": group.heading, "note": group.note, "per_file": per_file, "verdicts": found})
        for rows in group.per_file:
            data["runs"] += [(row, file_of[id(row)], label_of[file_of[id(row)]], group.heading) for row in rows]
    data["runs"] = RunPages(data["runs"])
    return data


class RunPages(Sequence[dict[str, Any]]):
    """Every run's page, each made when it is asked for (from its row, trace and folder): the page of 10,000 runs
    is written one run at a time (bench.analyze.view_page.write_page), never held whole."""

    def __init__(self, runs: list[tuple[ResultRow, str, str, str]]) -> None:
        self.runs = runs  # (row, its file, the file's label, its group's heading)

    def __len__(self) -> int:
        return len(self.runs)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self.runs))[index]]
        row, file, label, heading = self.runs[index]
        return run_page(row, Path(file), label, heading)


def command(paths: Sequence[Path], out: Path | None = None, skip_bad_rows: bool = False, by: str | None = None) -> int:
    """`bench view RESULTS.csv... [--out FILE] [--by SETTING]` (bench/cli/view.py)."""
    files = [str(path) for path in paths]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise ConfigError(f"bench view: no results file {', '.join(missing)}")
    out = out or Path(files[-1]).with_suffix(".html")
    if by:
        check_setting(by)
    with out.open("w", encoding="utf-8") as page:
        write_page(view_data(files, skip_bad_rows=skip_bad_rows, by=by), page)
    print(f"wrote {out} (open it in a browser; it needs no server and no network)")
    return 0
