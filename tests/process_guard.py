"""The fast tier's guard (`make test-fast` passes --no-child-processes): a test that starts a child process fails.

The fast tier leaves out the tests marked `processes` (and the real parts), and the marker comes from the fixtures
that start the agent, pytest, a bench or a server (tests/conftest.py, PROCESS_FIXTURES). A test that starts a
process some other way would slow the tier down unseen, so under this option every way Python has to start one
(subprocess, os.fork and posix_spawn, os.system, multiprocessing's fork_exec) fails the test that called it, even
where the code under test catches the error. pytest-xdist's workers are started by the controller, where nothing is
patched.
"""

from __future__ import annotations

import _posixsubprocess
import functools
import os
import subprocess
from collections.abc import Callable, Generator
from typing import Any

import pytest

OPTION = "--no-child-processes"
# What Python starts processes with: (the object holding it, its attribute name).
ENTRY_POINTS: tuple[tuple[Any, str], ...] = (
    (subprocess.Popen, "_execute_child"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
    (_posixsubprocess, "fork_exec"),
)
HOW_TO_FIX = (
    "the fast tier starts no process: take the fixture that starts it (tests/conftest.py, PROCESS_FIXTURES), "
    "which marks the test `processes`, or use the doubles of bench/testing/"
)


class ChildProcessForbidden(RuntimeError):
    """Raised where a test of the fast tier starts a process; the test fails even if the code catches this."""


class Guard:
    """The patched entry points, and what each test phase tried to start."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.patched: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        for owner, name in ENTRY_POINTS:
            original = getattr(owner, name, None)
            if original is not None:
                self.patched.append((owner, name, original))
                setattr(owner, name, self._refusing(name, original))

    def uninstall(self) -> None:
        for owner, name, original in reversed(self.patched):
            setattr(owner, name, original)
        self.patched.clear()

    def _refusing(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def refuse(*args: Any, **kwargs: Any) -> Any:
            what = f"{name}({_argv(name, args)})"
            self.attempts.append(what)
            raise ChildProcessForbidden(f"{what}: {HOW_TO_FIX}")

        return refuse

    def take(self) -> list[str]:
        attempts, self.attempts = self.attempts, []
        return attempts


def _argv(name: str, args: tuple[Any, ...]) -> str:
    """The program asked for, as far as the call's arguments tell (for the message only)."""
    argv = args[1] if name == "_execute_child" and len(args) > 1 else (args[0] if args else "")
    if isinstance(argv, list | tuple):
        argv = " ".join(str(a) for a in argv[:4])
    return repr(str(argv)[:120])


GUARD_KEY = pytest.StashKey[Guard]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, action="store_true", help="fail any test that starts a child process (make test-fast)")


def forbidding(config: pytest.Config) -> bool:
    return bool(config.getoption(OPTION, default=False))


def warm_caches() -> None:
    """What a library starts a process for once, to fill a cache of its own, is done before the guard is on: with a
    new home (a fresh clone, CI) matplotlib's first import lists the system's fonts with `fc-list`; the agent asks
    its interpreter's isolated path (`python -I`) once a process, before its first done check
    (agent/check_python.py)."""
    import matplotlib.font_manager  # noqa: F401

    from agent.check_python import interpreter_path

    interpreter_path()


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    # From collection on (test modules are imported then), in each pytest-xdist worker or in a run without workers;
    # not in xdist's controller, which starts the workers, and not before: a worker's start asks `uname -p`.
    config = session.config
    controller = config.getoption("numprocesses", default=None) and not hasattr(config, "workerinput")
    if forbidding(config) and not controller:
        warm_caches()
        guard = config.stash[GUARD_KEY] = Guard()
        guard.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(GUARD_KEY, None)
    if guard is not None:
        guard.uninstall()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    guard = item.config.stash.get(GUARD_KEY, None)
    attempts = guard.take() if guard is not None else []
    if attempts and report.outcome != "skipped":
        report.outcome = "failed"
        shown = "; ".join(attempts[:3])
        what = f"{item.nodeid} started {len(attempts)} child process(es) in its {call.when}"
        report.longrepr = f"{what}: {shown}\n{HOW_TO_FIX}"
    return report
