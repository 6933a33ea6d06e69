"""pytest in a throwaway copy of the repository, with nothing the agent wrote able to change how pytest runs.

For the done checks of part3+, strict and late (agent/done.py). What the agent could otherwise plant:
- configuration (pytest.ini `addopts = -p forcepass` or `--ignore=test_todo.py`, pyproject's `python_files`): the
  copy gets the pytest configuration files of the start snapshot at its root (or none), pytest is pointed at the
  one pytest would have chosen at start (`-c`, or an empty file of the agent's own outside the copy), with
  `--rootdir` and `--confcutdir` at the copy, so no file elsewhere is looked for;
- plugins: `PYTEST_DISABLE_PLUGIN_AUTOLOAD=1` (no entry points of anything installed), no other PYTEST_* or
  PYTHON* variable, `-p no:cacheprovider`, no bytecode files;
- start-up hooks and a stand-in pytest: the check's Python is isolated, its path the interpreter's own
  (agent/check_python.py);
- test files of any kind pytest collects (a doctest text file, a file its configuration names): the check's own
  plugin (agent/done_plugin.py) records every collected file the repository did not have at start, and leaves them
  all out of the run of the repository's own tests (`drop_new`);
- a module named like one of the standard library or of pytest (getpass.py, which pytest imports late): those
  always come from the interpreter (agent/done_plugin.py guard_imports);
- a link out of the copy (to a folder holding a conftest.py): the copy is refused (agent/check_copy.py);
- a run that collects nothing (exit 5), or that ends without pytest finishing its session (a test calling
  os._exit(0)), is no pass;
- a file changed while pytest runs (a process left running could rewrite it): every file of the copy is compared
  before and after the run, and everything the run started is killed when it ends, even what left its session
  (agent/shell.py kill_leftovers).
What runs is still the repository's code: a module under test that patches pytest when imported is not caught.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agent.check_copy import UNREADABLE, changes, links_out, make_copy, scratch_folder, state
from agent.check_python import check_environment, python_command
from agent.pytest_config import CONFIG_FILES, chosen_config
from agent.shell import CommandOutput, run_command
from agent.tools import OUTPUT_LIMIT

# Run in the check's Python (agent/check_python.py), whose path is the interpreter's own: pytest is imported from
# there, and then the current folder goes at the end of the path, where the repository's modules are still found.
PYTEST_MAIN = "import os, pytest\nsys.path.append(os.getcwd())\nraise SystemExit(pytest.console_main())"
PYTEST_OPTIONS = "-q -p no:cacheprovider"
# The same, with the check's plugin and its import guard; the plugin's arguments come first.
CHECK_MAIN = (
    "import importlib.util, os\n"
    "plugin_file, copy, known, record, mode = sys.argv[1:6]\n"
    "del sys.argv[1:6]\n"
    "import pytest\n"
    "spec = importlib.util.spec_from_file_location('agent_done_plugin', plugin_file)\n"
    "plugin = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(plugin)\n"
    "plugin.guard_imports()\n"
    "sys.path.append(os.getcwd())\n"
    "raise SystemExit(pytest.main(plugins=[plugin.make_plugin(pytest, copy, known, record, mode == 'drop')]))"
)
PLUGIN_FILE = Path(__file__).with_name("done_plugin.py")
NO_TESTS_COLLECTED = 5
COLLECTED = re.compile(r"(\d+) tests? collected|no tests collected")


def isolated_environment() -> dict[str, str]:
    """The check's environment (agent/check_python.py), with no plugins loaded by entry point."""
    return {**check_environment(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def pytest_command(arguments: str = "") -> str:
    """pytest as the checks of part2, clearing and part3 run it: the interpreter's own, in the repository as it is."""
    return python_command(PYTEST_MAIN, f"{PYTEST_OPTIONS} {arguments}")


@dataclass(frozen=True)
class IsolatedRun:
    output: CommandOutput
    changed: list[str] = field(default_factory=list)  # files of the copy written while pytest ran: `path (how)`
    new_tests: int | None = None  # tests pytest collects in `count_tests_in` (None when not asked)
    new_files: list[str] = field(default_factory=list)  # collected files the repository did not have at start
    finished: bool = True  # pytest finished its session (False: something ended it first)
    links_out: list[str] = field(default_factory=list)  # links leading out of the copy: it was not run

    @property
    def passed(self) -> bool:
        return self.output.exit_code == 0 and self.finished and not self.changed and not self.links_out


def run_isolated(
    root: Path,
    left_out: Iterable[str],
    config: dict[str, bytes],
    known: Iterable[str],
    protected: dict[str, str],
    timeout: float,
    count_tests_in: list[str] | None = None,
    drop_new: bool = False,
) -> IsolatedRun:
    """pytest in a copy without `left_out`. `known`: the repository's files at start (any other file pytest collects
    is new: recorded, and with `drop_new` not collected); `protected`: path -> start digest of the tests that must
    be as they were."""
    left_out = set(left_out)
    with scratch_folder() as folder:
        expected = {p: d for p, d in state(root).items() if p not in left_out | CONFIG_FILES.keys() and d != UNREADABLE}
        copy = make_copy(root, folder, left_out, config)
        if found := links_out(copy):
            return IsolatedRun(CommandOutput("", None, False), links_out=found)
        known_file, record = Path(folder) / "known.json", Path(folder) / "record.jsonl"
        known_file.write_text(json.dumps(sorted(known)))
        arguments = [PLUGIN_FILE, copy, known_file, record, "drop" if drop_new else "keep"]
        options = f"{shlex.join(str(a) for a in arguments)} {PYTEST_OPTIONS} {_options(copy, folder, config)}"
        command = python_command(CHECK_MAIN, options)
        before = state(copy)  # written since it was copied, or a test that is not as it was at start: no pass
        changed = [f"{path} (changed)" for path, digest in expected.items() if before.get(path) != digest]
        changed += [f"{path} (changed)" for path, digest in protected.items() if before.get(path) != digest]
        changed = sorted(set(changed))
        output = run_command(command, copy, timeout, OUTPUT_LIMIT, kill_leftovers=True, env=isolated_environment())
        changed += changes(before, state(copy))
        new_files, finished = _read_record(record)
        new_tests = None
        if count_tests_in is not None:
            new_tests = _count_tests(
                f"{command} --collect-only", copy, [*count_tests_in, *new_files], timeout=timeout, record=record
            )
    return IsolatedRun(
        output=output,
        changed=changed,
        new_tests=new_tests,
        new_files=new_files,
        finished=finished or output.exit_code is None,
    )


def _options(copy: Path, folder: str, config: dict[str, bytes]) -> str:
    """pytest's configuration options: the start's file (or an empty one of ours), rootdir and confcutdir the copy."""
    chosen = chosen_config(config)
    config_file = copy / chosen if chosen else Path(folder) / "pytest.ini"
    if chosen is None:
        config_file.write_text("[pytest]\n")  # the agent's own: no options at all
    where = shlex.quote(str(copy))
    return f"-c {shlex.quote(str(config_file))} --rootdir={where} --confcutdir={where}"


def _read_record(record: Path) -> tuple[list[str], bool]:
    """The new files the check's plugin saw, and whether pytest finished its session."""
    new, finished = [], False
    for kind, value in _record_entries(record):
        if kind == "new" and isinstance(value, str) and value not in new:
            new.append(value)
        finished = finished or kind == "finished"
    return new, finished


def _record_entries(record: Path) -> list[tuple[object, object]]:
    """The [kind, value] entries the check's plugin wrote, in order (lines that are not one are skipped)."""
    try:
        lines = record.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            kind, value = json.loads(line)
        except (ValueError, TypeError):
            continue
        entries.append((kind, value))
    return entries


def _count_tests(command: str, copy: Path, files: list[str], timeout: float, record: Path) -> int:
    """How many tests pytest collects from `files` whose code is their own (the check's plugin counts them: text
    that looks like a test is no test, and neither is one imported from an old test file)."""
    present = sorted({f for f in files if (copy / f).is_file()})
    if not present:
        return 0
    counted = run_command(
        f"{command} {shlex.join(present)}", copy, timeout, OUTPUT_LIMIT, kill_leftovers=True, env=isolated_environment()
    )
    own = [value for kind, value in _record_entries(record) if kind == "own_tests" and isinstance(value, int)]
    return own[-1] if counted.exit_code == 0 and own else 0


def collected_count(output: CommandOutput) -> int:
    """The count in the last line of `pytest --collect-only -q` (0 when the collection failed)."""
    counts = COLLECTED.findall(output.text)
    return int(counts[-1] or 0) if output.exit_code == 0 and counts else 0
