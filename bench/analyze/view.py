"""`python -m bench view RESULTS.csv... [--out report.html]`: one self-contained HTML page of a bench's results.

The page holds everything it shows (bench.analyze.view_page: the script, the styles, and the data as JSON), so it
opens from disk with no server and no network. Its first view is the matrix: per configuration (the groups of
`bench compare`, bench.analyze.matching) and file, the runs, completion, hidden tests passed, reprocessed tokens and
GPU peaks, and with two files or more each later file's verdicts against the first (bench.analyze.changes). Each run
opens a page of its own, step by step from its trace (`runs/<run_id>/events.jsonl` beside the CSV): the calls and
their arguments, result sizes, the window's fill, clearings, cut answers, 400s, Jeff's opinions, done checks, and the
hidden tests' outcome from `score.json`. Run-level numbers are the CSV's own cells, as written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.analyze import stats
from bench.analyze.changes import fmt_metric, metric_change
from bench.analyze.compare import SHOWN_METRICS, file_labels
from bench.analyze.matching import Group, match_files
from bench.analyze.runs import load_run
from bench.analyze.table import agent_runs, fmt_completed, fmt_values, stop_reasons
from bench.analyze.view_page import render
from bench.errors import ConfigError
from bench.measure.trace import Event
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
FOLD_AT = 160  # characters of a call's arguments shown before they are folded


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
            found.append({"against": f"{label} vs {labels[0]}", "metric": metric, "change": change.text,
                          "p": change.p_text(), "verdict": change.verdict(alpha)})  # fmt: skip
    return found


def steps_of(events: list[Event], n_ctx: int | None) -> list[dict[str, Any]]:
    """The trace, step by step: what happened at each request to Flint and after its answer."""
    steps: dict[int, dict[str, Any]] = {}
    for event in events:
        kind, number = event.get("event"), event.get("step")
        if kind in ("start", "stop") or not isinstance(number, int):
            continue
        step = steps.setdefault(number, {"step": number, "items": []})
        if kind == "response":
            usage: dict[str, Any] = event["usage"] if isinstance(event.get("usage"), dict) else {}
            total = usage.get("total_tokens")
            step["prompt_tokens"], step["total_tokens"] = usage.get("prompt_tokens"), total
            step["fill"] = round(100 * total / n_ctx, 1) if isinstance(total, int) and n_ctx else None
            step["finish_reason"] = event.get("finish_reason")
        else:
            step["items"].append(item_of(event))
    return [steps[n] for n in sorted(steps)]


def item_of(event: Event) -> dict[str, Any]:
    """One event as the page shows it: its kind, a one-line summary, and the long part folded."""
    kind = str(event.get("event"))
    if kind == "tool":
        args = json.dumps(event.get("args"), ensure_ascii=False)
        status = "ok" if event.get("ok") else ("failed: " + str(event["error"]) if event.get("error") else "failed")
        summary = f"{event.get('name')} → {event.get('result_chars')} characters, {status}"
        if event.get("truncated"):
            summary += ", truncated"
        return {"kind": kind, "summary": summary, "args": args, "folded": len(args) > FOLD_AT}
    if kind in ("jeff", "approval"):  # the command: in the line when short, folded like a call's arguments when long
        command = str(event.get("command"))
        shown = f"`{command}`" if len(command) <= FOLD_AT else "the command"
        if kind == "jeff":
            summary = f"Jeff on {shown}: {event.get('opinion') or event.get('error') or 'no opinion'}"
        else:
            summary = f"{shown} {'run' if event.get('decision') == 'run' else 'refused'} (by {event.get('by')})"
        if len(command) <= FOLD_AT:
            return {"kind": kind, "summary": summary}
        return {"kind": kind, "summary": summary, "args": command, "folded": True, "label": "command"}
    summaries = {
        "clear": lambda e: (
            f"clearing ({e.get('reason')}): {e.get('changed')} messages cleared "
            + (f"at {e.get('total_tokens')} tokens" if e.get("total_tokens") is not None else "after the 400")
        ),
        "cut": lambda e: (
            f"cut answer ({e.get('kind')}), {'dropped' if e.get('dropped') else 'kept'}"
            + (f": {e.get('message')}" if e.get("message") else "")
        ),
        "http_error": lambda e: f"HTTP {e.get('status')} {e.get('type')}: {e.get('message')}",
        "done_check": lambda e: (
            f"done check {'passed' if e.get('passed') else 'failed'}: {e.get('summary')}"
            + (f"; missing {', '.join(map(str, e.get('missing') or []))}" if e.get("missing") else "")
        ),
        "restored": lambda e: (
            f"tests put back after {e.get('after')}: "
            + ", ".join(f"{f.get('path')} ({f.get('was')})" for f in e.get("files") or [] if isinstance(f, dict))
        ),
    }
    describe = summaries.get(kind)
    return {"kind": kind, "summary": describe(event) if describe else json.dumps(event, ensure_ascii=False)[:300]}


def run_page(row: ResultRow, csv_path: Path, label: str, group: str) -> dict[str, Any]:
    runs_dir = csv_path.parent / "runs"
    run = load_run(row, runs_dir)
    page: dict[str, Any] = {"id": row.run_id, "file": label, "group": group, "fixture": row.fixture,
                            "preset": row.preset, "ctx": row.text("ctx"), "rep": row.text("rep"),
                            "cells": {column: row.text(column) for column, _ in RUN_CELLS},
                            "error": row.text("error"), "labels": list(row.failure_labels)}  # fmt: skip
    page["note"] = run.note
    page["steps"] = steps_of(run.events, row.ctx) if run.events else []
    stop = [e for e in run.events or [] if e.get("event") == "stop"]
    page["stop"] = f"{stop[-1].get('reason')}: {stop[-1].get('message') or ''}".rstrip(": ") if stop else ""
    page["hidden"] = hidden_outcomes(runs_dir / row.run_id / "score.json")
    return page


def hidden_outcomes(path: Path) -> list[list[str]]:
    """Each hidden or visible test's outcome from the run's score.json; [] when the run was not graded."""
    try:
        outcomes = json.loads(path.read_text()).get("outcomes", {})
    except (OSError, ValueError, AttributeError):
        return []
    return [[str(test), str(outcome)] for test, outcome in sorted(outcomes.items()) if isinstance(outcomes, dict)]


def view_data(files: Sequence[str], alpha: float = stats.ALPHA, skip_bad_rows: bool = False) -> dict[str, Any]:
    tables = [read_runs(file, skip_bad_rows) for file in files]
    labels = file_labels(files)
    groups = match_files(tables, labels)
    all_rows = [row for table in tables for row in agent_runs(table)]
    metrics = [m for m in SHOWN_METRICS if measured(all_rows, m)]
    data: dict[str, Any] = {"files": labels, "metrics": metrics, "run_cells": RUN_CELLS, "groups": [], "runs": []}
    data["unmeasured"] = [m for m in SHOWN_METRICS if m not in metrics]
    for group in groups:
        per_file = [
            {"file": label, "cells": group_cells(rows, metrics), "runs": [r.run_id for r in rows]}
            for label, rows in zip(labels, group.per_file, strict=True)
        ]
        found = verdicts(group, labels, metrics, alpha) if len(files) > 1 else []
        data["groups"].append({"heading": group.heading, "note": group.note, "per_file": per_file, "verdicts": found})
        for file, label, rows in zip(files, labels, group.per_file, strict=True):
            data["runs"] += [run_page(row, Path(file), label, group.heading) for row in rows]
    return data


def command(paths: Sequence[Path], out: Path | None = None, skip_bad_rows: bool = False) -> int:
    """`bench view RESULTS.csv... [--out FILE]` (bench/cli/view.py)."""
    files = [str(path) for path in paths]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        raise ConfigError(f"bench view: no results file {', '.join(missing)}")
    out = out or Path(files[-1]).with_suffix(".html")
    out.write_text(render(view_data(files, skip_bad_rows=skip_bad_rows)), encoding="utf-8")
    print(f"wrote {out} (open it in a browser; it needs no server and no network)")
    return 0
