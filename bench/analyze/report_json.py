"""`bench report --json`: the report's groups as numbers (bench.json_documents.REPORT), beside the page it wrote."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from bench.analyze.compare_json import runs_summary
from bench.analyze.comparison import SHOWN_METRICS
from bench.analyze.runs import Run
from bench.analyze.table import slug
from bench.json_documents import SCHEMA_VERSION
from bench.results.row import ResultRow


def group_figure(index: int, title: str) -> str:
    """The name of the report's figure of its index-th group."""
    return f"group-{index}-{slug(title)}.png"


def report_document(
    csv_path: Path, report: Path, rows: list[ResultRow], groups: list[tuple[str, list[Run]]], constant: list[str]
) -> dict[str, Any]:
    found = [_group(index, title, runs) for index, (title, runs) in enumerate(groups, start=1)]
    head = {"command": "report", "schema_version": SCHEMA_VERSION, "file": str(csv_path), "report": str(report)}
    return {**head, "runs": len(rows), "same_in_every_group": constant, "groups": found}


def _group(index: int, title: str, runs: list[Run]) -> dict[str, Any]:
    rows = [run.row for run in runs]
    return {
        "title": title,
        **runs_summary(rows, SHOWN_METRICS),
        "failure_labels": dict(Counter(label for row in rows for label in row.failure_labels)),
        "runs_without_trace": sum(not run.traced for run in runs),
        "figure": group_figure(index, title),
    }
