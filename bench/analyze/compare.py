"""`python -m bench compare OLD.csv NEW.csv [MORE.csv ...]`: the same configurations side by side, file by file,
and for each later file how each metric changed from the first, with what the runs can show about it.

Rows are grouped by configuration (names and setup, bench.analyze.matching). Per group, a table of values per file:
runs, infra_error runs (their own count, left out of everything else), runs completed, hidden tests passed per
run, stop reasons, and median [min–max] of each metric. Then per later file a table of changes: the change, its 95%
interval, the p-value of an exact test and the verdict (bench.analyze.stats, bench.analyze.changes).

`--pool-last K`: the last file is compared with a baseline pooled from the K most recent earlier files that hold
the same configuration, which can show far smaller changes than one earlier file of three runs.

Gates (`--fail-on METRIC[:PCT]`, repeatable; bench.analyze.gates) make the command exit 1 when a metric got worse
by more than PCT and the change is significant at --alpha.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.analyze import stats
from bench.analyze.changes import LOWER_IS_BETTER, NOT_MEASURED, fmt_metric, metric_change, signed
from bench.analyze.gates import Gate, gate_line, infra_line, parse_gate
from bench.analyze.matching import Group, file_date, match_files, pooled_groups
from bench.analyze.paired import describe, paired_flips
from bench.analyze.stats import fmt_p
from bench.analyze.table import (
    agent_runs,
    constant_columns,
    fmt_completed,
    fmt_values,
    group_key,
    infra_errors,
    markdown_table,
    stop_reasons,
)
from bench.errors import ConfigError
from bench.results.read import measured, read_runs
from bench.results.row import ResultRow

SHOWN_METRICS = [
    "wall_s",
    "prompt_tokens_reprocessed",
    "peak_gpu_mib_flint",
    "peak_gpu_mib_jeff",
    "peak_gpu_mib_device",
]
NO_RUNS = "—"


def file_labels(files: Sequence[str]) -> list[str]:
    """Short column names: the file names, with as many parent folders as it takes to tell them apart."""
    parts = [Path(file).parts for file in files]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{i}:{file}" for i, file in enumerate(files, start=1)]  # the same file given twice


def values_table(group: Group, labels: list[str], metrics: list[str]) -> str:
    """One configuration: a line per figure, a column per file (infra_error runs only in their own line)."""
    per_file = group.per_file

    def line(name: str, cell: Callable[[list[ResultRow]], str]) -> list[str]:
        return [name, *(cell(agent_runs(rows)) if rows else NO_RUNS for rows in per_file)]

    lines = [line("runs", lambda rows: str(len(rows)))]
    if any(infra_errors(rows) for rows in per_file):
        lines.append(["infra_error runs", *(str(infra_errors(rows)) if rows else NO_RUNS for rows in per_file)])
    lines += [
        line("completed", fmt_completed),
        line("hidden passed", lambda rows: fmt_values(rows, "hidden_passed")),
        line("stop reasons", stop_reasons),
    ]
    if any(row.reprocessed_check for rows in per_file for row in rows):
        lines.append(line("reprocessed check", lambda rows: _checks(rows)))
    lines += [line(metric, lambda rows, m=metric: fmt_metric(rows, m)) for metric in metrics]  # type: ignore[misc]
    return markdown_table(["", *labels], lines)


def _checks(rows: list[ResultRow]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        value = row.reprocessed_check or "not recorded"
        counts[value] = counts.get(value, 0) + 1
    return ", ".join(f"{value} {count}" for value, count in sorted(counts.items(), key=lambda i: (-i[1], i[0])))


def changes_table(old: list[ResultRow], new: list[ResultRow], heading: str, metrics: list[str], alpha: float) -> str:
    """Each figure's change from `old` to `new` runs: change, its 1 - alpha interval, p-value, verdict."""
    old, new = agent_runs(old), agent_runs(new)
    lines = []
    for metric in ["completed", "hidden_passed", *metrics]:
        change = metric_change(metric, old, new, alpha)
        lines.append([metric, change.text, change.interval, change.p_text(), change.verdict(alpha)])
    return markdown_table([heading, "change", f"{(1 - alpha) * 100:g}% interval", "p", "verdict"], lines)


def check_gates(
    gates: Sequence[Gate], groups: list[Group], labels: list[str], alpha: float, strict: bool = False
) -> list[str]:
    """One line per gate, group and later file; lines starting with FAIL tripped."""
    lines = []
    for gate in gates:
        for group in groups:
            for label, rows in zip(labels[1:], group.per_file[1:], strict=True):
                where = f"{group.heading}: {label} vs {labels[0]}"
                if gate.metric == "infra":
                    lines.append(infra_line(gate, rows, where))
                    continue
                if strict and not group.per_file[0] and rows:
                    lines.append(f"FAIL  {gate.describe(alpha)} in {where}: {NO_BASELINE}")
                    continue
                old, new = agent_runs(group.per_file[0]), agent_runs(rows)
                change = metric_change(gate.metric, old, new, alpha) if old and new else NOT_MEASURED
                lines.append(gate_line(gate, change, where, alpha, strict))
    return lines


NO_BASELINE = (
    "no earlier run of this configuration to compare with (--strict); if it changed on purpose (a new model, "
    "preset or setting), declare it and start a new baseline"
)


def paired_section(tables: Sequence[Sequence[ResultRow]], labels: list[str], gates: Sequence[Gate], alpha: float):
    """Per configuration run on the same fixtures in the first and a later file: the completion flips, McNemar's
    exact p, and the completed gate on them."""
    out, gate_lines = [], []
    completed = next((g for g in gates if g.metric == "completed"), None)
    for label, rows in zip(labels[1:], tables[1:], strict=True):
        for config, flips in paired_flips(tables[0], rows).items():
            where = f"{describe(config)}: {label} vs {labels[0]}, paired over {flips.fixtures} fixtures"
            out.append(
                [where, str(flips.pairs), str(flips.lost), str(flips.gained), f"{signed(flips.change_pp, '{:.0f}')} pp",
                 fmt_p(flips.p)]
            )  # fmt: skip
            if completed is not None:
                worse = -flips.change_pp > completed.limit and flips.p <= alpha
                verdict = "FAIL" if worse else "ok  "
                gate_lines.append(
                    f"{verdict}  {completed.describe(alpha)} in {where}: {flips.lost} lost, {flips.gained} gained of "
                    f"{flips.pairs} pairs, McNemar p = {fmt_p(flips.p)}"
                )
    if not out:
        return [], []
    headers = ["paired over fixtures", "pairs", "completed → not", "not → completed", "change", "McNemar p"]
    return ["## Completion, paired over fixtures", "", markdown_table(headers, out), ""], gate_lines


def compare(
    files: Sequence[str],
    gates: Sequence[Gate] = (),
    alpha: float = stats.ALPHA,
    pool_last: int = 0,
    strict: bool = False,
    skip_bad_rows: bool = False,
) -> tuple[str, bool]:
    """The comparison as markdown, and whether any gate tripped."""
    tables = [read_runs(file, skip_bad_rows) for file in files]
    groups, labels, intro = _grouped(tables, file_labels(files), pool_last)
    all_rows = [row for table in tables for row in agent_runs(table)]
    metrics = [m for m in SHOWN_METRICS if measured(all_rows, m)]
    metrics += [g.metric for g in gates if g.metric in LOWER_IS_BETTER and g.metric not in metrics]
    unmeasured = [m for m in SHOWN_METRICS if m not in metrics]
    constant = constant_columns(list(dict.fromkeys(group_key(row) for table in tables for row in table)))

    out = [f"# Compare: {' → '.join(labels)}", "", *intro]
    out += [f"Same in every group: {', '.join(constant)}."] if constant else []
    out += [f"Not measured in any file: {', '.join(unmeasured)}."] if unmeasured else []
    out += _method(alpha)
    for group in groups:
        out += _group_section(group, labels, metrics, alpha)
    gate_lines = check_gates(gates, groups, labels, alpha, strict)
    if not pool_last:
        section, paired_gates = paired_section(tables, labels, gates, alpha)
        out += section
        gate_lines += paired_gates
    if gate_lines:
        out += ["## Gates", "", *(f"    {line}" for line in gate_lines), ""]
    return "\n".join(out), any(line.startswith("FAIL") for line in gate_lines)


def _grouped(
    tables: list[list[ResultRow]], names: list[str], pool_last: int
) -> tuple[list[Group], list[str], list[str]]:
    """The groups compared, the labels of their columns, and the lines that say how they were formed."""
    if not pool_last or len(tables) < 2:
        return match_files(tables, names), names, []
    earlier = sorted(zip(names[:-1], tables[:-1], strict=True), key=lambda item: file_date(item[1]))
    groups = pooled_groups(earlier, tables[-1], names[-1], pool_last)
    labels = [f"baseline (last {pool_last} files)", names[-1]]
    intro = [f"The runs of {names[-1]} against a baseline pooled, per configuration, from the last {pool_last} "]
    return groups, labels, [*intro, "earlier files that hold it.", ""]


def _method(alpha: float) -> list[str]:
    """What the values and tests are, once at the top."""
    return [
        "Values: median [min–max] over the agent's runs (infra_error runs are counted apart and left out). Each",
        "change is tested on the runs, two-sided: Mann–Whitney U for measured values, Fisher's exact test for the",
        f"completed share; a change is beyond noise at p ≤ {alpha:g}. Completed = stopped with done and all hidden",
        "tests passed. An interval is the test turned around (the changes it cannot rule out): unbounded when the",
        "runs are too few for any test to count. A gate is indeterminate when its runs can detect (80% power) only",
        "changes larger than its threshold, or none: it neither passed nor failed, and more runs would tell.",
        "",
    ]


def _group_section(group: Group, labels: list[str], metrics: list[str], alpha: float) -> list[str]:
    """One group: its values per file, then each later file's changes against the first."""
    out = [f"## {group.heading}", ""]
    out += [group.note, ""] if group.note else []
    out += [values_table(group, labels, metrics), ""]
    for label, rows in zip(labels[1:], group.per_file[1:], strict=True):
        if group.per_file[0] and rows:
            out += [changes_table(group.per_file[0], rows, f"{label} vs {labels[0]}", metrics, alpha), ""]
    return out


@dataclass(frozen=True)
class CompareOptions:
    """`bench compare`'s options (bench/cli/compare.py)."""

    files: list[str]  # the older first
    fail_on: list[str] = field(default_factory=list)  # METRIC[:PCT] gates
    alpha: float = 0.05
    pool_last: int = 0
    strict: bool = False
    skip_bad_rows: bool = False


def command(options: CompareOptions) -> int:
    gates = [parse_gate(text) for text in options.fail_on]
    if not 0 < options.alpha < 1:
        raise ConfigError(f"--alpha {options.alpha}: give a level between 0 and 1, e.g. 0.05")
    if options.pool_last < 0:
        raise ConfigError(f"--pool-last {options.pool_last}: give a number of files, e.g. 7")
    report, tripped = compare(
        options.files, gates, options.alpha, options.pool_last, options.strict, options.skip_bad_rows
    )
    print(report)
    return 1 if tripped else 0
