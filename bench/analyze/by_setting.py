"""`bench compare FILE... --by SETTING`: configurations that differ only in one setting compared with each other, in
one file or across files, with the same tables, tests and gates as files are compared.

Each file's rows are grouped by configuration (bench.analyze.table.group_key). Groups whose keys are equal but in
SETTING form a family; its sides are the (file, value) pairs in the order they first appear (files in the order given),
the first the baseline each later side is compared with. A family with one side has nothing to compare it with, and
says so. Nothing else differs inside a family, so its changes are gated as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.analyze.matching import Group, set_titles
from bench.analyze.table import KEY_COLUMNS, GroupKey, group_rows, key_part, varying_columns
from bench.errors import ConfigError
from bench.results.row import ResultRow

# Settings that belong to the one compared: `--by agent` compares each agent with its own (the article's preset, the
# API each speaks), so the family holds article·part3 beside mini-swe-agent.
OWN_SETTINGS = {"agent": ("preset", "api_dialect")}
NOT_COMPARABLE = {"flint_serving": "forced_tools measures the harness, never the model: it is not compared with native"}


def check_setting(setting: str) -> int:
    """The index of SETTING in the configuration's key; ConfigError naming the settings when it is none of them."""
    if setting in NOT_COMPARABLE:
        raise ConfigError(f"--by {setting}: {NOT_COMPARABLE[setting]}")
    if setting not in KEY_COLUMNS:
        choices = ", ".join(c for c in KEY_COLUMNS if c not in NOT_COMPARABLE)
        raise ConfigError(f"--by {setting}: not a setting of the comparison's key; choose from {choices}")
    return KEY_COLUMNS.index(setting)


def families(tables: Sequence[Sequence[ResultRow]], labels: Sequence[str], setting: str) -> list[Group]:
    """One group per family: its sides' rows, and their labels (`part3`, or `a.csv · part3` across files)."""
    index = check_setting(setting)
    own = {index, *(KEY_COLUMNS.index(c) for c in OWN_SETTINGS.get(setting, ()) if c in KEY_COLUMNS)}
    found: dict[GroupKey, list[tuple[str, str, GroupKey, list[ResultRow]]]] = {}
    for label, table in zip(labels, tables, strict=True):
        for key, rows in group_rows(table).items():
            rest = tuple(part for i, part in enumerate(key) if i not in own)
            found.setdefault(rest, []).append((label, key[index], key, rows))
    groups = []
    for sides in found.values():
        several_files = len({label for label, _, _, _ in sides}) > 1
        names = [
            f"{label} · {_value(key, own, index)}" if several_files else _value(key, own, index)
            for label, _, key, _ in sides
        ]
        group = Group(sides[0][2], [rows for _, _, _, rows in sides], split=True, labels=names)
        group.note = "" if len(sides) > 1 else f"Only one {setting} ({names[0]}): nothing to compare it with."
        groups.append(group)
    set_titles(groups, hidden=index)
    if not [i for i in varying_columns([g.key for g in groups]) if i != index]:  # one family: the setting says it
        for group in groups:
            group.title = f"by {setting}"
    return groups


def _value(key: GroupKey, own: set[int], index: int) -> str:
    """The side's name: its value of the setting, then its own settings that it has (`article·part3`)."""
    name = key_part(key, index) if key[index] else f"no {KEY_COLUMNS[index]}"
    extra = [key_part(key, i) for i in sorted(own - {index}) if key[i] and KEY_COLUMNS[i] == "preset"]
    return "·".join([name, *extra])
