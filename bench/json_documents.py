"""The JSON documents the read-only commands print with `--json`, one per command, each described by a JSON Schema
(draft 2020-12) here: docs/json.md is generated from these (bench/docgen.py), and tests/test_json_documents.py runs
each command and validates what it printed against its schema.

Every document names its `command` and its `schema_version` (bumped when a field changes meaning or goes away; new
fields may appear without it). A value that was not measured is null, never 0; JSON has no infinity, so an unbounded
interval end is null too (the text beside it says which).
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1
Schema = dict[str, Any]

NUMBER_OR_NULL: Schema = {"type": ["number", "null"]}
INT_OR_NULL: Schema = {"type": ["integer", "null"]}
TEXT_OR_NULL: Schema = {"type": ["string", "null"]}
TEXTS: Schema = {"type": "array", "items": {"type": "string"}}
COUNTS: Schema = {"type": "object", "additionalProperties": {"type": "integer"}}


def record(properties: dict[str, Schema], doc: str = "") -> Schema:
    """An object with exactly these properties, all required."""
    found: Schema = {"type": "object", "properties": properties, "required": list(properties)}
    found["additionalProperties"] = False
    return {"description": doc, **found} if doc else found


def document(command: str, doc: str, properties: dict[str, Schema]) -> Schema:
    head: dict[str, Schema] = {"command": {"const": command}, "schema_version": {"const": SCHEMA_VERSION}}
    return record(head | properties, doc)


SPREAD = record(
    {
        "median": NUMBER_OR_NULL,
        "min": NUMBER_OR_NULL,
        "max": NUMBER_OR_NULL,
        "count": {"type": "integer"},
        "left_out": COUNTS,
    },
    "median and range over the runs that measured the metric; left_out: figures not confirmed, by check",
)
SIDE = record(
    {
        "label": {"type": "string"},
        "runs": {"type": "integer"},
        "infra_error_runs": {"type": "integer"},
        "completed": {"type": "integer"},
        "hidden_passed": {"type": "array", "items": INT_OR_NULL},
        "stop_reasons": COUNTS,
        "metrics": {"type": "object", "additionalProperties": SPREAD},
        "gpu_energy_j_per_completed": NUMBER_OR_NULL,
    },
    "one side of a group: a file, a pooled baseline, or (--by) a value of the setting; counts are the agent's runs",
)
CHANGE = record(
    {
        "against": {"type": "string"},
        "metric": {"type": "string"},
        "change": {"type": "string"},
        "worse_by": NUMBER_OR_NULL,
        "interval": {"type": "string"},
        "interval_low": NUMBER_OR_NULL,
        "interval_high": NUMBER_OR_NULL,
        "p": NUMBER_OR_NULL,
        "verdict": {"type": "string"},
    },
    "one metric of a later side against the first: worse_by and the interval in percent (completed: points)",
)
GATE = record(
    {
        "outcome": {"enum": ["FAIL", "ok", "indeterminate", "skip"]},
        "metric": {"type": "string"},
        "limit": NUMBER_OR_NULL,
        "gate": {"type": "string"},
        "where": {"type": "string"},
        "detail": {"type": "string"},
        "power": {"type": ["object", "null"], "additionalProperties": {"type": ["number", "null"]}},
        "said": TEXT_OR_NULL,
        "line": {"type": "string"},
    },
    "one gate on one group and later side; power: old_runs, new_runs, power (0.8), gate_catches and test_detects "
    "(percent; points for completed; null: nothing can be caught), reps_needed when indeterminate",
)
GROUP = record(
    {
        "heading": {"type": "string"},
        "title": {"type": "string"},
        "differs": TEXT_OR_NULL,
        "inputs_differ": TEXTS,
        "not_gated": TEXT_OR_NULL,
        "note": TEXT_OR_NULL,
        "sides": {"type": "array", "items": SIDE},
        "changes": {"type": "array", "items": CHANGE},
        "not_compared": TEXT_OR_NULL,
    },
    "one configuration; not_gated says why its gates were not applied (inputs differ), not_compared why it has "
    "no changes",
)
PAIRED = record(
    {
        "where": {"type": "string"},
        "pairs": {"type": "integer"},
        "fixtures": {"type": "integer"},
        "lost": {"type": "integer"},
        "gained": {"type": "integer"},
        "change_pp": {"type": "number"},
        "p": {"type": "number"},
    },
    "completion flips over common fixtures, with McNemar's exact p",
)

COMPARE = document(
    "compare",
    "bench compare --json: the groups, their sides' values, the changes with intervals and p-values, the gates",
    {
        "files": TEXTS,
        "labels": TEXTS,
        "alpha": {"type": "number"},
        "by": TEXT_OR_NULL,
        "pool_last": {"type": "integer"},
        "same_in_every_group": TEXTS,
        "not_measured": TEXTS,
        "groups": {"type": "array", "items": GROUP},
        "paired": {"type": "array", "items": PAIRED},
        "gates": {"type": "array", "items": GATE},
        "tripped": {"type": "boolean"},
    },
)

NIGHT = record(
    {
        "date": {"type": "string"},
        "version": {"type": "string"},
        "file": {"type": "string"},
        "runs": {"type": "integer"},
        "infra_error_runs": {"type": "integer"},
        "values": {"type": "object", "additionalProperties": NUMBER_OR_NULL},
    },
    "one file's runs of the configuration: the median of each metric (completed: the share completed)",
)
SHIFT = record(
    {
        "metric": {"type": "string"},
        "night": {"type": "integer"},
        "before": {"type": "number"},
        "after": {"type": "number"},
        "text": {"type": "string"},
    },
    "a change point: the first night (index into nights) of a new regime, the medians of the nights before and after",
)
HISTORY = document(
    "history",
    "bench history --json: per configuration, its nights oldest first and the change points E-Divisive found",
    {
        "files": TEXTS,
        "alpha": {"type": "number"},
        "metrics": TEXTS,
        "same_in_every_configuration": TEXTS,
        "report": {"type": "string"},
        "configurations": {
            "type": "array",
            "items": record(
                {
                    "title": {"type": "string"},
                    "nights": {"type": "array", "items": NIGHT},
                    "change_points": {"type": "array", "items": SHIFT},
                    "too_few_nights": {"type": "boolean"},
                }
            ),
        },
    },
)

REPORT_GROUP = record(
    {
        "title": {"type": "string"},
        "runs": {"type": "integer"},
        "infra_error_runs": {"type": "integer"},
        "completed": {"type": "integer"},
        "hidden_passed": {"type": "array", "items": INT_OR_NULL},
        "stop_reasons": COUNTS,
        "failure_labels": COUNTS,
        "metrics": {"type": "object", "additionalProperties": SPREAD},
        "gpu_energy_j_per_completed": NUMBER_OR_NULL,
        "runs_without_trace": {"type": "integer"},
        "figure": {"type": "string"},
    },
)
REPORT = document(
    "report",
    "bench report --json: the report's groups as numbers, and where report.md and its figures were written",
    {
        "file": {"type": "string"},
        "report": {"type": "string"},
        "runs": {"type": "integer"},
        "same_in_every_group": TEXTS,
        "groups": {"type": "array", "items": REPORT_GROUP},
    },
)

FIXTURES_CHECK = document(
    "fixtures check",
    "bench fixtures check --json: each fixture's problems (empty when sound) and what was measured",
    {
        "root": {"type": "string"},
        "ok": {"type": "boolean"},
        "fixtures": {
            "type": "array",
            "items": record(
                {
                    "name": {"type": "string"},
                    "ok": {"type": "boolean"},
                    "problems": TEXTS,
                    "summary": {"type": "string"},
                    "code_decided": {"type": ["array", "null"], "items": {"type": "string"}},
                    "unsealed": INT_OR_NULL,
                }
            ),
        },
    },
)

PREDICTIONS_SCORE = document(
    "predictions score",
    "bench predictions score --json: each prediction's verdict and the numbers behind it",
    {
        "predictions_file": {"type": "string"},
        "results_file": {"type": "string"},
        "predictions": {
            "type": "array",
            "items": record(
                {
                    "id": {"type": "string"},
                    "says": {"type": "string"},
                    "verdict": {"enum": ["HIT", "MISS", "NOT SCORABLE"]},
                    "matching": {"type": "integer"},
                    "satisfied": {"type": "integer"},
                    "unknown": {"type": "integer"},
                    "values": {"type": "string"},
                    "lines": TEXTS,
                }
            ),
        },
        "tally": record({"hit": {"type": "integer"}, "miss": {"type": "integer"}, "not_scorable": {"type": "integer"}}),
    },
)

SCHEMAS: dict[str, Schema] = {
    "compare": COMPARE,
    "history": HISTORY,
    "report": REPORT,
    "fixtures check": FIXTURES_CHECK,
    "predictions score": PREDICTIONS_SCORE,
}
