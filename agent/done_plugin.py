"""The done check's own plugin for pytest (part3+, strict, late), loaded from this file by the check's pytest
(agent/isolated_pytest.py starts it) and never imported by the agent: it uses the standard library and the pytest
it is handed.

- `guard_imports`: the standard library and pytest's own modules are imported from where the interpreter has them,
  never from the repository, whatever stands first on sys.path when they are imported. pytest imports some of them
  late, after its import mode has put the copy's folders in front (getpass at the first use of tmp_path), so a
  getpass.py the agent wrote would otherwise run inside pytest.
- `make_plugin`: every file that a collector of pytest takes (its python_files, doctest text files, a conftest's
  own) and that the repository did not have at start is recorded as new; with `drop`, pytest does not collect it,
  so none of its code runs. At the end of the session the exit status is recorded: a pytest that ended without it
  was ended by something else (a test calling os._exit), and proves nothing. After collection, the number of tests
  whose code is in the file they were collected from is recorded (strict counts new tests by it).
The record is JSON lines in a file outside the copy: ["new", "path"], ["own_tests", count], ["finished", status].
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
from collections.abc import Generator
from typing import Any

# Besides the standard library and what pytest has imported by the time the guard is set: what it may import later
# (its dependencies, the optional ones, and the backports it uses on Python 3.10).
PYTEST_OWN = frozenset(
    {"_pytest", "pytest", "pluggy", "iniconfig", "packaging", "py", "pygments", "colorama", "tomli", "exceptiongroup"}
)


class _FromTheInterpreter:
    """A finder for the top-level modules in `names`: built in, frozen, or on `path` (the interpreter's own path,
    taken before the repository was added), and nowhere else."""

    def __init__(self, names: frozenset[str], path: list[str]) -> None:
        self.names = names
        self.path = path

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if path is not None or name not in self.names:
            return None  # submodules: their package's own path decides
        for finder in (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter):
            spec = finder.find_spec(name)
            if spec is not None:
                return spec
        spec = importlib.machinery.PathFinder.find_spec(name, self.path)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r} (the repository's own is not used)", name=name)
        return spec


def guard_imports() -> None:
    """From now on, the standard library and pytest's own modules come from the interpreter's path as it is now."""
    names = set(sys.stdlib_module_names) | {name.split(".")[0] for name in sys.modules} | PYTEST_OWN
    names.discard("__main__")
    sys.meta_path.insert(0, _FromTheInterpreter(frozenset(names), list(sys.path)))


def make_plugin(pytest: Any, copy: str, known_file: str, record_file: str, drop: bool) -> object:
    """The plugin object for `pytest.main(plugins=[...])`; `known_file` lists the repository's files at start."""
    with open(known_file, encoding="utf-8") as f:
        known = frozenset(json.load(f))
    root = os.path.realpath(copy)
    record = os.open(record_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def write(entry: list[object]) -> None:
        os.write(record, (json.dumps(entry) + "\n").encode())  # at once: an interpreter ended later loses nothing

    class DonePlugin:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_collect_file(self, file_path: Any, parent: Any) -> Generator[None, Any, None]:
            outcome = yield
            if not outcome.get_result():
                return
            relative = os.path.relpath(os.path.realpath(file_path), root)  # a file reached through a link: its own
            if relative not in known:
                write(["new", relative])
                if drop:
                    outcome.force_result([])

        def pytest_collection_finish(self, session: Any) -> None:
            write(["own_tests", sum(1 for item in session.items if _defined_where_collected(item))])

        @pytest.hookimpl(trylast=True)
        def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
            write(["finished", int(exitstatus)])

    return DonePlugin()


def _defined_where_collected(item: Any) -> bool:
    """A test whose code is in the file it was collected from: not one imported (`from test_todo import *`),
    aliased or wrapped from another file. Tests without code of their own (a doctest) are their file's."""
    code = getattr(getattr(item, "obj", None), "__code__", None)
    if code is None:
        return True
    return os.path.realpath(code.co_filename) == os.path.realpath(str(item.path))
