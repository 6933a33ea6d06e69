"""Where pytest takes its configuration from, as pytest looks for it.

pytest looks for its configuration in the folder of its arguments and then upwards, taking the first of these files
that holds its section (pytest.toml and pytest.ini count even when empty); without one, an ancestor's setup.py or
pyproject.toml still decides its rootdir, where it writes its cache. The done checks of part3+, strict and late use
the start's files (agent/isolated_pytest.py); the safe-command rule refuses a by-rule pytest that would read a
configuration, or write its cache, above the repository (agent/rules.py).
"""

from __future__ import annotations

import re
from pathlib import Path

# The files pytest reads its configuration from, in the order it looks for them, and how it tells that a file
# holds pytest's section (None: the file counts whatever it holds).
CONFIG_FILES: dict[str, re.Pattern[str] | None] = {
    "pytest.toml": None,
    ".pytest.toml": None,
    "pytest.ini": None,
    ".pytest.ini": None,
    "pyproject.toml": re.compile(r"^\s*\[\s*tool\.pytest(\.ini_options)?\s*\]", re.MULTILINE),
    "tox.ini": re.compile(r"^\s*\[\s*pytest\s*\]", re.MULTILINE),
    "setup.cfg": re.compile(r"^\s*\[\s*tool:pytest\s*\]", re.MULTILINE),
}
ROOTDIR_MARKERS = ("setup.py", "pyproject.toml")  # without a configuration, these still make a folder the rootdir
MAX_CONFIG_BYTES = 1_000_000


def start_config(root: Path) -> dict[str, bytes]:
    """The pytest configuration files at the repository's root, as they are now (taken at the start)."""
    found = {}
    for name in CONFIG_FILES:
        path = root / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_CONFIG_BYTES:
            found[name] = path.read_bytes()
    return found


def chosen_config(config: dict[str, bytes]) -> str | None:
    """The file pytest would read its configuration from, among `config` (one folder's files)."""
    for name, section in CONFIG_FILES.items():
        if name in config and (section is None or section.search(config[name].decode("utf-8", "replace"))):
            return name
    return None


def reaches_above(root: Path) -> bool:
    """True when pytest run inside `root` could take a configuration or a rootdir from a folder above it: `root` has
    no configuration of its own, and a folder above holds a file pytest looks at."""
    if chosen_config(start_config(root)) is not None:
        return False  # pytest stops at the repository's own
    names = (*CONFIG_FILES, *ROOTDIR_MARKERS)
    return any((folder / name).exists() for folder in root.parents for name in names)
