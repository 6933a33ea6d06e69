"""Which runs of several files are compared with which: the same configuration, never a mix of setups.

A configuration is its names (fixture, preset, ctx, model names) and its setup (model sha256s, server build, GPU
name, memory method, sandbox kind; bench.analyze.table.KEY_COLUMNS). Inside a file, runs of different setups are
never pooled. Across files:
- each file holds one setup for these names: one group, compared file to file; when the setups differ, the group's
  heading says how ("server_build b4000 (a.csv) vs b4100 (b.csv)"), so the change is read with its cause in view;
- a file holds several setups for these names: one group per setup.

Inputs before code: a setup column other than where and on what the runs ran (ENVIRONMENT_COLUMNS) is an input of the
run (max_steps, sampling, keep, clear_at, the servers' flags, the fixture's hash, the models' sha256s, and any setup
column added later). A group whose files differ in an input (`inputs`) is shown but not gated: its change is one of
inputs, not of code, unless `compare --by` names that setting (bench.analyze.by_setting).

A pooled baseline (`--pool-last K`) takes, for each configuration of the newest file, the runs of the K most recent
earlier files that hold that very configuration; when none does, the most recent setup of the same names, and the
heading says what differs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from bench.analyze.table import (
    GROUP_COLUMNS,
    KEY_COLUMNS,
    GroupKey,
    group_rows,
    group_title,
    key_part,
    names_of,
    varying_columns,
)
from bench.results.row import ResultRow

# Setup columns that say where and on what the runs ran, not what they were given: a change of these between files
# is compared and gated as it is (a new server build, another GPU); every other setup column is an input.
ENVIRONMENT_COLUMNS = ("sandbox", "servers", "server_build", "server_package", "gpu_name", "gpu_mem_method")


@dataclass
class Group:
    """One configuration: its rows in each file (or baseline), and what differs between them, if anything."""

    key: GroupKey
    per_file: list[list[ResultRow]]
    differs: str = ""  # "server_build b4000 (a.csv) vs b4100 (b.csv)"
    split: bool = False  # one of several setups of the same names inside a file
    title: str = ""
    note: str = ""
    inputs: list[str] = field(default_factory=list)  # input columns that differ between the sides: not gated
    labels: list[str] | None = None  # the sides' own names (compare --by); None: the comparison's file labels

    @property
    def heading(self) -> str:
        return f"{self.title} — differs: {self.differs}" if self.differs else self.title


def file_date(rows: Sequence[ResultRow]) -> str:
    """When a file's runs started (the earliest started_at); "" when none says."""
    return min((row.started_at for row in rows if row.started_at), default="")


def match_files(tables: Sequence[Sequence[ResultRow]], labels: Sequence[str]) -> list[Group]:
    keyed = [group_rows(rows) for rows in tables]
    names_order = list(dict.fromkeys(names_of(key) for table in keyed for key in table))
    groups = []
    for names in names_order:
        setups = [[key for key in table if names_of(key) == names] for table in keyed]
        if all(len(keys) <= 1 for keys in setups):
            keys = [keys[0] if keys else None for keys in setups]
            per_file = [keyed[i][key] if key else [] for i, key in enumerate(keys)]
            present = [(label, key) for label, key in zip(labels, keys, strict=True) if key]
            groups.append(Group(present[0][1], per_file, describe_setups(present), inputs=inputs_differ(present)))
        else:
            for key in dict.fromkeys(key for keys in setups for key in keys):
                groups.append(Group(key, [table.get(key, []) for table in keyed], split=True))
    set_titles(groups)
    return groups


def pooled_groups(
    earlier: Sequence[tuple[str, Sequence[ResultRow]]], new: Sequence[ResultRow], label: str, last: int
) -> list[Group]:
    """For each configuration of the new file: [baseline rows, new rows], the baseline pooled from the `last`
    most recent earlier files of that configuration (files in `earlier` are oldest first)."""
    newest_first = [(name, group_rows(rows)) for name, rows in reversed(earlier)]
    groups = []
    for key, rows in group_rows(new).items():
        base_key = key
        if not any(key in table for _, table in newest_first):  # fall back to the latest setup of the same names
            base_key = next((k for _, table in newest_first for k in table if names_of(k) == names_of(key)), key)
        used = [(name, table[base_key]) for name, table in newest_first if base_key in table][:last]
        pooled = [row for _, file_rows in reversed(used) for row in file_rows]
        differs = describe_setups([("baseline", base_key), (label, key)]) if used else ""
        inputs = inputs_differ([("baseline", base_key), (label, key)]) if used else []
        files = [name for name, _ in reversed(used)]
        note = f"Baseline: {len(pooled)} runs from {len(files)} files ({', '.join(files)})." if used else ""
        note = note or "No earlier file holds this setup."
        groups.append(Group(key, [pooled, list(rows)], differs, note=note, inputs=inputs))
    set_titles(groups)
    return groups


def describe_setups(present: Sequence[tuple[str, GroupKey]]) -> str:
    """`server_build b4000 (a.csv) vs b4100 (b.csv)` for each setup column that differs; "" when none does."""
    parts = []
    for i in range(len(GROUP_COLUMNS), len(KEY_COLUMNS)):
        if len({key[i] for _, key in present}) > 1:
            parts.append(" vs ".join(f"{key_part(key, i)} ({label})" for label, key in present))
    return "; ".join(parts)


def inputs_differ(present: Sequence[tuple[str, GroupKey]]) -> list[str]:
    """The input columns (setup columns but ENVIRONMENT_COLUMNS) whose value differs between these keys."""
    return [
        KEY_COLUMNS[i]
        for i in range(len(GROUP_COLUMNS), len(KEY_COLUMNS))
        if KEY_COLUMNS[i] not in ENVIRONMENT_COLUMNS and len({key[i] for _, key in present}) > 1
    ]


def set_titles(groups: list[Group], hidden: Collection[int] = ()) -> None:
    """Titles name what varies between groups: the names that vary, and for groups split by setup, the setup
    columns that vary among the groups of the same names; never the columns at `hidden` (compare --by's setting and
    those that follow from it, which the sides show)."""
    shown = [i for i in varying_columns([g.key for g in groups]) if i < len(GROUP_COLUMNS) and i not in hidden]
    for group in groups:
        group.title = group_title(group.key, shown, hidden)
        if group.split:
            siblings = [g.key for g in groups if g.split and names_of(g.key) == names_of(group.key)]
            setup = [i for i in varying_columns(siblings) if i >= len(GROUP_COLUMNS) and i not in hidden]
            group.title += "".join(f" · {key_part(group.key, i)}" for i in setup)
