"""`python -m bench compare OLD.csv NEW.csv [MORE.csv ...]`: the same configurations side by side, file by file,
and for each later file how each metric changed from the first, with what the runs can show about it.

Rows are grouped by configuration (names and setup, bench.analyze.matching); `--by SETTING` compares configurations
that differ only in that setting instead (bench.analyze.by_setting). Per group, a table of values per side: runs,
infra_error runs (their own count, left out of everything else), runs completed, hidden tests passed per run, stop
reasons, and median [min–max] of each metric. Then per later side a table of changes: the change, its 95% interval,
the p-value of an exact test and the verdict (bench.analyze.stats, bench.analyze.changes).

Inputs before code: when the sides of a group differ in an input setting (max_steps, sampling, the servers' flags,
...), the output says so first and that group's gates are not applied (bench.analyze.comparison).

`--pool-last K`: the last file is compared with a baseline pooled from the K most recent earlier files that hold
the same configuration, which can show far smaller changes than one earlier file of three runs.

Gates (`--fail-on METRIC[:PCT]`, repeatable; bench.analyze.gates) make the command exit 1 when a metric got worse
by more than PCT and the change is significant at --alpha. `--json` prints one JSON document instead
(bench.analyze.compare_json, docs/json.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from bench.analyze import stats
from bench.analyze.changes import fmt_metric, metric_change, signed
from bench.analyze.compare_json import document
from bench.analyze.comparison import SHOWN_METRICS as SHOWN_METRICS  # the view shows the same figures
from bench.analyze.comparison import CompareOptions as CompareOptions
from bench.analyze.comparison import Comparison, build, inputs_note
from bench.analyze.comparison import file_labels as file_labels
from bench.analyze.energy import LABEL as ENERGY_LABEL
from bench.analyze.energy import fmt_energy_per_completed, measured_energy
from bench.analyze.matching import Group
from bench.analyze.stats import fmt_p
from bench.analyze.table import agent_runs, fmt_completed, fmt_values, infra_errors, markdown_table, stop_reasons
from bench.results.row import ResultRow

NO_RUNS = "—"


def values_table(group: Group, labels: Sequence[str], metrics: list[str]) -> str:
    """One configuration: a line per figure, a column per side (infra_error runs only in their own line)."""
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
    if any(measured_energy(rows) for rows in per_file):
        lines.append(line(ENERGY_LABEL, fmt_energy_per_completed))
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


def markdown(found: Comparison) -> str:
    """The comparison as markdown: inputs that differ first, then every group, the paired flips and the gates."""
    options = found.options
    out = [f"# Compare: {' → '.join(found.labels)}", "", *_inputs_first(found), *found.intro]
    out += [f"Same in every group: {', '.join(found.constant)}."] if found.constant else []
    out += [f"Not measured in any file: {', '.join(found.unmeasured)}."] if found.unmeasured else []
    out += _method(options.alpha)
    for group in found.groups:
        out += _group_section(group, found.sides(group), found.metrics, options.alpha)
    out += _paired_section(found)
    if found.gates:
        out += ["## Gates", "", *(f"    {result.line}" for result in found.gates), ""]
    return "\n".join(out)


def _inputs_first(found: Comparison) -> list[str]:
    """Before anything else: the groups whose sides differ in an input, which are shown but not gated."""
    differing = [group for group in found.groups if group.inputs]
    if not differing:
        return []
    out = ["**The inputs differ**, so these changes are not a change of code and no gate applies to them:", ""]
    out += [f"- {group.heading}: {inputs_note(group.inputs)}" for group in differing]
    return [*out, ""]


def _method(alpha: float) -> list[str]:
    """What the values and tests are, once at the top."""
    return [
        "Values: median [min–max] over the agent's runs (infra_error runs are counted apart and left out). Each",
        "change is tested on the runs, two-sided: Mann–Whitney U for measured values, Fisher's exact test for the",
        f"completed share; a change is beyond noise at p ≤ {alpha:g}. Completed = stopped with done and all hidden",
        "tests passed. An interval is the test turned around (the changes it cannot rule out): unbounded when the",
        "runs are too few for any test to count. A gate fails for a change beyond its threshold that its test finds",
        "significant; it states the change it catches 4 times in 5 (simulated from the runs' spread), and is",
        "indeterminate when its test alone cannot reach 80% power at its threshold: more runs would tell.",
        "",
    ]


def _group_section(group: Group, labels: Sequence[str], metrics: list[str], alpha: float) -> list[str]:
    """One group: its values per side, then each later side's changes against the first."""
    out = [f"## {group.heading}", ""]
    out += [group.note, ""] if group.note else []
    out += [values_table(group, labels, metrics), ""]
    for label, rows in zip(labels[1:], group.per_file[1:], strict=True):
        if group.per_file[0] and rows:
            out += [
                changes_table(
                    old=group.per_file[0], new=rows, heading=f"{label} vs {labels[0]}", metrics=metrics, alpha=alpha
                ),
                "",
            ]
    return out


def _paired_section(found: Comparison) -> list[str]:
    if not found.paired:
        return []
    lines = [
        [
            p.where,
            str(p.flips.pairs),
            str(p.flips.lost),
            str(p.flips.gained),
            f"{signed(p.flips.change_pp, '{:.0f}')} pp",
            fmt_p(p.flips.p),
        ]
        for p in found.paired
    ]
    headers = ["paired over fixtures", "pairs", "completed → not", "not → completed", "change", "McNemar p"]
    return ["## Completion, paired over fixtures", "", markdown_table(headers, lines), ""]


def compare(
    files: Sequence[str],
    gates: Sequence[str] = (),
    alpha: float = stats.ALPHA,
    pool_last: int = 0,
    strict: bool = False,
    by: str | None = None,
) -> tuple[str, bool]:
    """The comparison as markdown, and whether any gate tripped (gates as `--fail-on` takes them)."""
    found = build(
        CompareOptions(files=list(files), fail_on=list(gates), alpha=alpha, pool_last=pool_last, strict=strict, by=by)
    )
    return markdown(found), found.tripped


def command(options: CompareOptions) -> int:
    found = build(options)
    print(json.dumps(document(found), indent=2, ensure_ascii=False) if options.json else markdown(found))
    return 1 if found.tripped else 0
