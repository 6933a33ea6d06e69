"""The long tests first, by what they took the last time they ran on this machine, so that the workers end together.

pytest-xdist hands the tests out in collection order (`make test`: `--dist loadgroup --no-loadscope-reorder`), a
group (xdist_group) as one unit, each to the first worker with room. When a long unit comes late, one worker runs it
alone at the end while the others wait; longest first, the short ones fill the workers' last minutes. So the suite
records each test's time (setup, call and teardown) in a table on this machine, kept as the models and images are
(~/.cache/agent-bench/test-durations.json), and sorts the units by it, longest first. A test it has not timed yet
counts as long when it needs a real part (a real server, containers, a whole bench: HEAVY), else as short.
The table is read once, by pytest-xdist's controller, and handed to every worker: the workers must sort alike (xdist
stops when their collections differ), whatever another run writes meanwhile.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

HEAVY = ("slow", "llama", "docker", "podman", "compose")
UNTIMED_HEAVY_S = 60.0  # an untimed heavy test: among the long ones, not behind every timed one
UNTIMED_S = 0.0
TABLE_KEY = "test_durations"  # in the workers' workerinput
TABLE = pytest.StashKey[dict[str, float]]()  # in the config of the process that read it
timed: dict[str, float] = {}  # this run's times, by test id (without xdist's @group)
recording = False  # in the process that sees every test's report: xdist's controller, or pytest without workers


def table_path() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agent-bench" / "test-durations.json"


def read_table() -> dict[str, float]:
    try:
        table = json.loads(table_path().read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in table.items()} if isinstance(table, dict) else {}


def plain_id(nodeid: str) -> str:
    """The id without the `@group` pytest-xdist appends under --dist loadgroup (a parameter may hold an @)."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def unit(item: pytest.Item) -> str:
    group = item.get_closest_marker("xdist_group")
    return f"@{group.args[0] if group.args else group.kwargs.get('name')}" if group else item.nodeid


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sorts the tests by their unit's time, longest first; a unit's tests keep their order. After the suite's own
    hook (tests/conftest.py, tryfirst), which adds the xdist_group marks that make the units."""
    table = table_of(config)
    seconds: dict[str, float] = {}
    for item in items:
        heavy = any(item.get_closest_marker(marker) for marker in HEAVY)
        guess = table.get(plain_id(item.nodeid), UNTIMED_HEAVY_S if heavy else UNTIMED_S)
        seconds[unit(item)] = seconds.get(unit(item), 0.0) + guess
    items.sort(key=lambda item: -seconds[unit(item)])


def table_of(config: pytest.Config) -> dict[str, float]:
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        return dict(workerinput.get(TABLE_KEY) or {})
    return config.stash.setdefault(TABLE, read_table())


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before a worker starts: the table it read, for the worker to sort by."""
    node.workerinput[TABLE_KEY] = table_of(node.config)


def pytest_configure(config: pytest.Config) -> None:
    global recording
    recording = not hasattr(config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if recording:
        key = plain_id(report.nodeid)
        timed[key] = timed.get(key, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Merges this run's times into the table."""
    if not recording or not timed:
        return
    path = table_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        table = read_table() | {k: round(v, 2) for k, v in timed.items()}
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
            json.dump(table, f, sort_keys=True)
        os.replace(f.name, path)
