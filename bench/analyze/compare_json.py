"""`bench compare --json`: the comparison as one JSON document (its schema: bench.analyze.schemas, docs/json.md).

The same figures as the markdown: per group its sides' values, each later side's changes (the change, the interval
as text and numbers, p, the verdict), why a group was not compared or not gated, the paired flips, every gate with
its outcome and power, and whether one tripped. Numbers are numbers; a value not measured is null, never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.analyze.changes import metric_change, values_of
from bench.analyze.comparison import Comparison, inputs_note
from bench.analyze.energy import energy_per_completed
from bench.analyze.gates import GateResult
from bench.analyze.matching import Group
from bench.analyze.table import agent_runs, infra_errors, spread
from bench.json_documents import SCHEMA_VERSION
from bench.results.read import is_completed
from bench.results.row import ResultRow


def document(found: Comparison) -> dict[str, Any]:
    options = found.options
    return {
        "command": "compare",
        "schema_version": SCHEMA_VERSION,
        "files": list(options.files),
        "labels": found.labels,
        "alpha": options.alpha,
        "by": options.by,
        "pool_last": options.pool_last,
        "same_in_every_group": found.constant,
        "not_measured": found.unmeasured,
        "groups": [_group(found, group) for group in found.groups],
        "paired": [
            {
                "where": p.where,
                "pairs": p.flips.pairs,
                "fixtures": p.flips.fixtures,
                "lost": p.flips.lost,
                "gained": p.flips.gained,
                "change_pp": p.flips.change_pp,
                "p": p.flips.p,
            }
            for p in found.paired
        ],
        "gates": [gate_json(result) for result in found.gates],
        "tripped": found.tripped,
    }


def _group(found: Comparison, group: Group) -> dict[str, Any]:
    sides = found.sides(group)
    changes, not_compared = [], None
    first = agent_runs(group.per_file[0])
    for label, rows in zip(sides[1:], group.per_file[1:], strict=True):
        if first and agent_runs(rows):
            changes += _changes(first, agent_runs(rows), f"{label} vs {sides[0]}", found)
    if not changes:
        not_compared = group.note or (
            f"{sides[0]} holds no runs of this configuration" if not first else "no later side holds runs of it"
        )
    return {
        "heading": group.heading,
        "title": group.title,
        "differs": group.differs or None,
        "inputs_differ": group.inputs,
        "not_gated": inputs_note(group.inputs) if group.inputs else None,
        "note": group.note or None,
        "sides": [_side(label, rows, found.metrics) for label, rows in zip(sides, group.per_file, strict=True)],
        "changes": changes,
        "not_compared": not_compared,
    }


def _side(label: str, rows: list[ResultRow], metrics: list[str]) -> dict[str, Any]:
    return {"label": label, **runs_summary(rows, metrics)}


def runs_summary(rows: list[ResultRow], metrics: Sequence[str]) -> dict[str, Any]:
    """What a document says of a set of rows (compare's sides, report's groups): the agent's runs, those that ended
    in infra_error, completions, hidden tests passed, stop reasons, each metric's spread, and the GPU's joules per
    completed run (null where a run's energy was not measured, or none completed)."""
    runs = agent_runs(rows)
    return {
        "runs": len(runs),
        "infra_error_runs": infra_errors(rows),
        "completed": sum(is_completed(row) for row in runs),
        "hidden_passed": [row.hidden_passed for row in runs],
        "stop_reasons": dict(Counter(row.stop_reason or "n/a" for row in runs)),
        "metrics": {metric: spread_json(runs, metric) for metric in metrics},
        "gpu_energy_j_per_completed": energy_per_completed(rows),
    }


def spread_json(rows: list[ResultRow], metric: str) -> dict[str, Any]:
    values, left_out = values_of(rows, metric)
    found = spread(values)
    shown = {"median": found.median, "min": found.low, "max": found.high} if found else {}
    return {"median": None, "min": None, "max": None, **shown, "count": len(values), "left_out": dict(left_out)}


def _changes(old: list[ResultRow], new: list[ResultRow], against: str, found: Comparison) -> list[dict[str, Any]]:
    alpha, out = found.options.alpha, []
    for metric in ["completed", "hidden_passed", *found.metrics]:
        change = metric_change(metric, old, new, alpha)
        low, high = change.bounds if change.bounds else (None, None)
        out.append(
            {
                "against": against,
                "metric": metric,
                "change": change.text,
                "worse_by": _finite(change.worse_by),
                "interval": change.interval,
                "interval_low": _finite(low),
                "interval_high": _finite(high),
                "p": change.test.p if change.test else None,
                "verdict": change.verdict(alpha),
            }
        )
    return out


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded end, or a change from 0, is null (the text says which)."""
    return None if value is None or not math.isfinite(value) else value


def gate_json(result: GateResult) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "metric": result.metric,
        "limit": result.limit,
        "gate": result.gate,
        "where": result.where,
        "detail": result.detail,
        "power": result.power,
        "said": result.said or None,
        "line": result.line,
    }
