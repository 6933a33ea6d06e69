"""What `bench compare` found, as data: the groups and their sides, the gates' results, the paired flips. The command
prints it as markdown (bench.analyze.compare) or as one JSON document (bench.analyze.compare_json).

The groups come from bench.analyze.matching (files side by side, or a pooled baseline) or bench.analyze.by_setting
(`--by SETTING`). Every later side of a group is compared with its first. A group whose sides differ in an input
(inputs before code, bench.analyze.matching) is shown but not gated: a gate on it says why (FAIL with --strict).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.analyze.by_setting import by_for, check_setting, families, suggestions, what_is_compared
from bench.analyze.changes import LOWER_IS_BETTER, NOT_MEASURED, metric_change
from bench.analyze.gates import Gate, GateResult, evaluate, infra_result, parse_gate
from bench.analyze.matching import Group, file_date, match_files, pooled_groups
from bench.analyze.paired import Flips, describe, paired_flips
from bench.analyze.stats import fmt_p
from bench.analyze.table import agent_runs, constant_columns, group_key
from bench.errors import ConfigError
from bench.results.read import measured, read_runs
from bench.results.row import ResultRow

SHOWN_METRICS = [
    "wall_s",
    "prompt_tokens_reprocessed",
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
    "gpu_energy_j",
]
# The series' next experiments (bench/results/summary_columns.py), with the steps and model time by role: shown only
# where some run summarized or let Jeff take steps, so that other comparisons keep their table.
EXPERIMENT_METRICS = {
    "summaries": ["summaries", "summaries_left_out", "summary_tokens", "summary_model_s", "reprocessed_by_summary"],
    "jeff_steps": ["jeff_steps", "escalations", "steps", "flint_model_s", "jeff_model_s"],
}
NO_BASELINE = (
    "no earlier run of this configuration to compare with (--strict); if it changed on purpose (a new model, "
    "preset or setting), declare it and start a new baseline"
)


@dataclass(frozen=True)
class CompareOptions:
    """`bench compare`'s options (bench/cli/compare.py)."""

    files: list[str]  # the older first
    fail_on: list[str] = field(default_factory=list)  # METRIC[:PCT] gates
    alpha: float = 0.05
    pool_last: int = 0
    strict: bool = False
    skip_bad_rows: bool = False
    by: str | None = None  # compare configurations that differ only in this setting
    json: bool = False  # one JSON document rather than markdown


@dataclass(frozen=True)
class Paired:
    """One configuration's completion flips over common fixtures, between the first and a later file."""

    where: str
    flips: Flips


@dataclass
class Comparison:
    options: CompareOptions
    labels: list[str]  # the files' labels (or the baseline's and the last file's)
    groups: list[Group]
    metrics: list[str]  # the metrics shown: measured somewhere, or gated
    constant: list[str]  # `fixture todo_repo` for each key column the same in every group
    unmeasured: list[str]
    intro: list[str] = field(default_factory=list)
    gates: list[GateResult] = field(default_factory=list)
    paired: list[Paired] = field(default_factory=list)

    @property
    def tripped(self) -> bool:
        return any(result.outcome == "FAIL" for result in self.gates)

    def sides(self, group: Group) -> list[str]:
        return group.labels or self.labels


def file_labels(files: Sequence[str]) -> list[str]:
    """Short column names: the file names, with as many parent folders as it takes to tell them apart."""
    parts = [Path(file).parts for file in files]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{i}:{file}" for i, file in enumerate(files, start=1)]  # the same file given twice


def check_options(options: CompareOptions) -> list[Gate]:
    gates = [parse_gate(text) for text in options.fail_on]
    if not 0 < options.alpha < 1:
        raise ConfigError(f"--alpha {options.alpha}: give a level between 0 and 1, e.g. 0.05")
    if options.pool_last < 0:
        raise ConfigError(f"--pool-last {options.pool_last}: give a number of files, e.g. 7")
    if options.by is not None:
        check_setting(options.by)
        if options.pool_last:
            raise ConfigError("--by and --pool-last cannot be combined: compare the pooled files --by, or pool them")
    return gates


def build(options: CompareOptions) -> Comparison:
    """Read the files, form the groups, run every gate."""
    gates = check_options(options)
    tables = [read_runs(file, options.skip_bad_rows) for file in options.files]
    groups, labels, intro = _grouped(tables, file_labels(options.files), options)
    all_rows = [row for table in tables for row in agent_runs(table)]
    metrics = [m for m in SHOWN_METRICS if measured(all_rows, m)]
    metrics += [m for key, shown in EXPERIMENT_METRICS.items() if any(measured(all_rows, key)) for m in shown]
    metrics += [g.metric for g in gates if g.metric in LOWER_IS_BETTER and g.metric not in metrics]
    unmeasured = [m for m in SHOWN_METRICS if m not in metrics]
    constant = constant_columns(list(dict.fromkeys(group_key(row) for table in tables for row in table)))
    found = Comparison(
        options=options,
        labels=labels,
        groups=groups,
        metrics=metrics,
        constant=constant,
        unmeasured=unmeasured,
        intro=intro,
    )
    found.gates = check_gates(found, gates)
    if not options.pool_last and options.by is None:
        found.paired, paired_gates = paired_results(tables, labels, gates, options.alpha)
        found.gates += paired_gates
    return found


def _grouped(
    tables: list[list[ResultRow]], names: list[str], options: CompareOptions
) -> tuple[list[Group], list[str], list[str]]:
    """The groups compared, the labels of their columns, and the lines that say how they were formed."""
    if options.by is not None:
        said = f"Configurations that differ only in {what_is_compared(options.by)} compared with each other, the "
        return families(tables, names, options.by), names, [said + "first value seen first.", ""]
    pool_last = options.pool_last
    if not pool_last or len(tables) < 2:
        return match_files(tables, names), names, suggest_by(tables, options.files)
    earlier = sorted(zip(names[:-1], tables[:-1], strict=True), key=lambda item: file_date(item[1]))
    groups = pooled_groups(earlier, tables[-1], names[-1], pool_last)
    labels = [f"baseline (last {pool_last} files)", names[-1]]
    intro = [f"The runs of {names[-1]} against a baseline pooled, per configuration, from the last {pool_last} "]
    return groups, labels, [*intro, "earlier files that hold it.", ""]


def suggest_by(tables: Sequence[Sequence[ResultRow]], files: Sequence[str]) -> list[str]:
    """Where configurations find nothing to compare with but would by one setting, the command that pairs them."""
    settings = suggestions([list(dict.fromkeys(group_key(row) for row in table)) for table in tables])
    if not settings:
        return []
    named = " or ".join(f"`{setting}`" for setting in settings)
    commands = "; ".join(f"`bench compare {' '.join(files)} --by {setting}`" for setting in settings)
    return [f"These configurations differ in {named}: {commands} gives verdicts between them.", ""]


def check_gates(found: Comparison, gates: Sequence[Gate]) -> list[GateResult]:
    """Every gate on every group and later side."""
    alpha, strict = found.options.alpha, found.options.strict
    results = []
    for gate in gates:
        for group in found.groups:
            sides = found.sides(group)
            for label, rows in zip(sides[1:], group.per_file[1:], strict=True):
                where = f"{group.heading}: {label} vs {sides[0]}"
                result = _gate_on(gate=gate, group=group, rows=rows, where=where, alpha=alpha, strict=strict)
                results.append(replace(result, metric=gate.metric, limit=gate.limit))
    return results


def _gate_on(gate: Gate, group: Group, rows: list[ResultRow], where: str, alpha: float, strict: bool) -> GateResult:
    if gate.metric == "infra":
        return infra_result(gate, rows, where)
    head = gate.describe(alpha)
    if strict and not group.per_file[0] and rows:
        return GateResult("FAIL", head, where, NO_BASELINE)
    if group.inputs and group.per_file[0] and rows:
        return GateResult("FAIL" if strict else "skip", head, where, inputs_note(group.inputs))
    old, new = agent_runs(group.per_file[0]), agent_runs(rows)
    change = metric_change(gate.metric, old, new, alpha) if old and new else NOT_MEASURED
    return evaluate(gate=gate, change=change, where=where, alpha=alpha, strict=strict)


def inputs_note(columns: Sequence[str]) -> str:
    """Why a group with differing inputs is not gated, and how to gate it."""
    names = ", ".join(columns)
    return (
        f"not gated: the inputs differ ({names}), so the change is one of inputs, not of code; "
        f"compare --by {by_for(columns)} compares them as such"
    )


def paired_results(
    tables: Sequence[Sequence[ResultRow]], labels: list[str], gates: Sequence[Gate], alpha: float
) -> tuple[list[Paired], list[GateResult]]:
    """Per configuration run on the same fixtures in the first and a later file: the completion flips, McNemar's
    exact p, and the completed gate on them."""
    found, results = [], []
    completed = next((g for g in gates if g.metric == "completed"), None)
    for label, rows in zip(labels[1:], tables[1:], strict=True):
        for config, flips in paired_flips(tables[0], rows).items():
            where = f"{describe(config)}: {label} vs {labels[0]}, paired over {flips.fixtures} fixtures"
            found.append(Paired(where, flips))
            if completed is not None:
                worse = -flips.change_pp > completed.limit and flips.p <= alpha
                detail = (
                    f"{flips.lost} lost, {flips.gained} gained of {flips.pairs} pairs, McNemar p = {fmt_p(flips.p)}"
                )
                outcome = "FAIL" if worse else "ok"
                results.append(
                    GateResult(
                        outcome, completed.describe(alpha), where, detail, metric="completed", limit=completed.limit
                    )
                )
    return found, results
