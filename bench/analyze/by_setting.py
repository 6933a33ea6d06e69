"""`bench compare FILE... --by SETTING`: configurations that differ only in one setting compared with each other, in
one file or across files, with the same tables, tests and gates as files are compared.

Each file's rows are grouped by configuration (bench.analyze.table.group_key). Groups whose keys are equal but in
SETTING and the columns that follow from it (FOLLOWS: late's clear_at, the cache settings parsed from Flint's flags,
a model's sha256) form a family; its sides are the (file, value) pairs in the order they first appear (files in the
order given), the first the baseline each later side is compared with. A family with one side has nothing to compare
it with, and says so. Nothing else differs inside a family, so its changes are gated as they are.

A plain compare whose groups find nothing to compare with says which `--by` would pair them (suggestions()).
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.analyze.matching import Group, set_titles
from bench.analyze.table import KEY_COLUMNS, GroupKey, group_rows, key_part, names_of, varying_columns
from bench.errors import ConfigError
from bench.results.row import ResultRow

NOT_COMPARABLE = {"flint_serving": "forced_tools measures the harness, never the model: it is not compared with native"}

# Flint's cache and attention settings, as the bench reads them from its flags (bench/llama/reuse.py).
PARSED_FROM_FLAGS = (
    "swa_full",
    "ctx_checkpoints",
    "cache_reuse",
    "cache_ram_mib",
    "cache_type_k",
    "cache_type_v",
    "flash_attn",
)
# The key columns that move with a setting: comparing by the setting lets them differ too. A parsed cache setting
# follows from the flags and the flags from it (`--by cache_reuse` is an A/B of FLINT_SERVER_ARGS).
FOLLOWS: dict[str, tuple[str, ...]] = {
    # `--by agent` compares each agent with its own settings (the article's preset, the API each speaks), so the
    # family holds article·part3 beside mini-swe-agent
    "agent": ("preset", "clear_at", "api_dialect"),
    "preset": ("clear_at",),  # a preset's own threshold (late: 0.75) is recorded as clear_at
    "flint_model": ("flint_model_sha256",),
    "jeff_model": ("jeff_model_sha256",),
    "flint_model_sha256": ("flint_model",),
    "jeff_model_sha256": ("jeff_model",),
    "flint_server_args": PARSED_FROM_FLAGS,
    **{setting: ("flint_server_args",) for setting in PARSED_FROM_FLAGS},
}


def check_setting(setting: str) -> int:
    """The index of SETTING in the configuration's key; ConfigError naming the settings when it is none of them."""
    if setting in NOT_COMPARABLE:
        raise ConfigError(f"--by {setting}: {NOT_COMPARABLE[setting]}")
    if setting not in KEY_COLUMNS:
        choices = ", ".join(c for c in KEY_COLUMNS if c not in NOT_COMPARABLE)
        raise ConfigError(f"--by {setting}: not a setting of the comparison's key; choose from {choices}")
    return KEY_COLUMNS.index(setting)


def moving(setting: str) -> list[int]:
    """The key indexes that may differ inside a family of `--by setting`: its own, then those that follow from it."""
    return [check_setting(setting), *(KEY_COLUMNS.index(c) for c in FOLLOWS.get(setting, ()) if c in KEY_COLUMNS)]


def what_is_compared(setting: str) -> str:
    """`preset (and clear_at, which follows from it)`."""
    follows = [c for c in FOLLOWS.get(setting, ()) if c in KEY_COLUMNS]
    verb = "follows" if len(follows) == 1 else "follow"
    return f"{setting} (and {', '.join(follows)}, which {verb} from it)" if follows else setting


def by_for(columns: Sequence[str]) -> str:
    """The `--by` that compares configurations differing in these columns: the one the others follow from (of
    cache_reuse and flint_server_args, the flags), else the first."""
    covering = [c for c in columns if set(columns) <= {c, *FOLLOWS.get(c, ())} and c not in NOT_COMPARABLE]
    return max(covering, key=lambda c: len(FOLLOWS.get(c, ())), default=columns[0])


def _rest(key: GroupKey, indexes: Sequence[int]) -> GroupKey:
    return tuple(value for i, value in enumerate(key) if i not in indexes)


def families(tables: Sequence[Sequence[ResultRow]], labels: Sequence[str], setting: str) -> list[Group]:
    """One group per family: its sides' rows, and their labels (`part3`, or `a.csv · part3` across files)."""
    indexes = moving(setting)
    found: dict[GroupKey, list[tuple[str, GroupKey, list[ResultRow]]]] = {}
    for label, table in zip(labels, tables, strict=True):
        for key, rows in group_rows(table).items():
            found.setdefault(_rest(key, indexes), []).append((label, key, rows))
    groups = []
    for sides in found.values():
        names = _side_names([(label, key) for label, key, _ in sides], indexes)
        group = Group(sides[0][1], [rows for _, _, rows in sides], split=True, labels=names)
        group.note = "" if len(sides) > 1 else f"Only one {setting} ({names[0]}): nothing to compare it with."
        groups.append(group)
    set_titles(groups, hidden=indexes)
    if not [i for i in varying_columns([g.key for g in groups]) if i not in indexes]:  # one family: --by says it
        for group in groups:
            group.title = f"by {setting}"
    return groups


def _side_names(sides: Sequence[tuple[str, GroupKey]], indexes: Sequence[int]) -> list[str]:
    """Each side by the setting's value, its file when the family spans files, and the columns that follow from the
    setting where they tell two sides of the same value apart (`late · clear_at 0.75` only when needed)."""
    several_files = len({label for label, _ in sides}) > 1
    names = []
    for label, key in sides:
        parts = [label] if several_files else []
        parts.append(_value(key, indexes[0]))
        same_value = [k for _, k in sides if k[indexes[0]] == key[indexes[0]]]
        parts += [key_part(key, i) for i in indexes[1:] if len({k[i] for k in same_value}) > 1]
        names.append(" · ".join(parts))
    return names


def _value(key: GroupKey, index: int) -> str:
    """The side's value of the setting; an agent's with its preset where it has one (`article·part3`)."""
    name = key_part(key, index) if key[index] else f"no {KEY_COLUMNS[index]}"
    preset = KEY_COLUMNS.index("preset")
    return f"{name}·{key[preset]}" if KEY_COLUMNS[index] == "agent" and key[preset] else name


def suggestions(keys_per_file: Sequence[Sequence[GroupKey]]) -> list[str]:
    """The `--by` settings that would pair configurations a plain compare shows alone (in one file, every one; across
    files, those whose names only one file holds); of settings that follow from each other, the one they follow from
    (flint_server_args, not cache_reuse). Empty when none would."""
    alone = _alone(keys_per_file)
    found = []
    for setting in KEY_COLUMNS:
        if setting in NOT_COMPARABLE:
            continue
        indexes = moving(setting)
        rests: dict[GroupKey, set[GroupKey]] = {}
        for key in alone:
            rests.setdefault(_rest(key, indexes), set()).add(key)
        # paired only where the setting itself differs (two presets of one agent are no question of `--by agent`)
        if any(len({key[indexes[0]] for key in keys}) > 1 for keys in rests.values()):
            found.append(setting)
    return leading(found)


def leading(settings: Sequence[str]) -> list[str]:
    """These settings but those that follow from another of them (clear_at beside preset, cache_reuse beside
    flint_server_args)."""
    return [setting for setting in settings if not any(_leads(other, setting) for other in settings)]


def _leads(other: str, setting: str) -> bool:
    """`setting` follows from `other`, which the others follow from more (a model before its own sha256)."""
    if other == setting or setting not in FOLLOWS.get(other, ()):
        return False
    rank = {c: (len(FOLLOWS.get(c, ())), -KEY_COLUMNS.index(c)) for c in (other, setting)}
    return rank[other] > rank[setting]


def _alone(keys_per_file: Sequence[Sequence[GroupKey]]) -> list[GroupKey]:
    """Configurations a plain compare shows without a side to compare them with (bench.analyze.matching groups files
    by the configuration's names)."""
    if len(keys_per_file) == 1:
        return list(keys_per_file[0])
    files_of: dict[GroupKey, int] = {}
    for keys in keys_per_file:
        for names in {names_of(key) for key in keys}:
            files_of[names] = files_of.get(names, 0) + 1
    return [key for keys in keys_per_file for key in keys if files_of[names_of(key)] == 1]
