"""The bench's witness inside a grading pytest run, imported by the session's start-up (bench/score/supervisor.py)
from the bench's plugin folder before pytest starts, so before any test module is imported.

It reports on a pipe that the grading supervisor opened and reads, one JSON line per record: for every phase of
every test, whether it raised, as seen after every other plugin made its report (a subtest's phase counts too: any
raise makes the test a failure); at the end, pytest's exit status, the modules the session loaded from the graded
repository, whether the session was sealed and, for library-style tests, how the code under test's process ran
(bench/score/standin.py). The pipe's number is handed over in the environment, which this module empties at once,
and moved to a random descriptor among decoy pipes of the same kind; the process is made non-dumpable, so that no
other process (a test's child, the code under test's process) can open its descriptors or read its memory.

As soon as it is imported, before pytest collects anything, Landlock keeps this process's writes, and those of
every program it starts, to the repository copy, the temporary folder and the reports (bench/score/landlock.py), and
the hidden tests' folder while program-style tests are still on disk: the code that an open session's tests import
while they are collected can write nothing where pytest's own modules, the bench's plugins or the tests not yet
collected come from, nor anything outside the session. Once the tests are collected, before any runs, it seals the
session: program-style hidden tests leave the disk (the program they run cannot read them) and their folder leaves
the writable ones (a second Landlock layer), and every folder of the session leaves sys.path (the plugin folder
already has: the start-up takes it off once this module and the stand-ins are imported). Where the kernel has no
Landlock, the modules pytest imports only while tests run are imported before they run instead.
Standard library and pytest only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import pkgutil
import random
import shutil
import sys
from typing import Any

import pytest

from . import landlock

PR_SET_DUMPABLE = 4
_write = os.write  # taken now: code that later replaces os.write does not see what the witness writes


def _free_descriptor() -> int:
    chooser = random.SystemRandom()
    while True:
        fd = chooser.randrange(64, 1000)
        try:
            os.fstat(fd)
        except OSError:
            return fd


def _take_channels() -> int | None:
    """The witness's pipe, moved to a random descriptor like each decoy; None when none was handed over."""
    witness = os.environ.pop("BENCH_WITNESS_FD", "")
    decoys = [int(fd) for fd in os.environ.pop("BENCH_DECOY_FDS", "").split(",") if fd.isdigit()]
    if not witness.isdigit():
        return None
    moved = []
    for fd in [int(witness), *decoys]:
        try:
            target = _free_descriptor()
            os.dup2(fd, target, inheritable=False)
            os.close(fd)
        except OSError:
            return None
        moved.append(target)
    return moved[0]


with contextlib.suppress(OSError, AttributeError):
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
_CHANNEL = _take_channels()
_HIDE = os.environ.pop("BENCH_WITNESS_HIDE", "")  # a folder to delete once its tests are imported
_SEAL = json.loads(os.environ.pop("BENCH_WITNESS_SEAL", "{}") or "{}")  # {"session": folder, "writable": [...]}
_ROOT = os.path.realpath(os.getcwd())
_SEALED: dict[str, Any] = {}


def _seal_from_start() -> None:
    """Writes kept, from now on, to the session's own folders and, until its tests leave the disk, the hidden tests'
    folder: this runs before pytest collects, so the code under test imported by an open session's tests cannot
    write a test not yet collected, the bench's plugins or anything outside the session while it is imported."""
    if not _SEAL:
        return
    why = landlock.confine([], [*_SEAL.get("writable", []), *([_HIDE] if _HIDE else [])], limit_reads=False)
    _SEALED.update(from_start=why is None)


_seal_from_start()
# What pytest (7.2 to 9) imports only while tests run: imported before they run where the session cannot be sealed.
LATE_IMPORTS = (
    "getpass",
    "pwd",
    "grp",
    "termios",
    "difflib",
    "dataclasses",
    "pprint",
    "doctest",
    "pdb",
    "faulthandler",
    "tracemalloc",
    "hashlib",
    "pickle",
    "pkgutil",
    "tomllib",
    "unittest",
    "warnings",
    "weakref",
)


def _say(record: dict[str, Any]) -> None:
    if _CHANNEL is not None:
        with contextlib.suppress(OSError):
            _write(_CHANNEL, (json.dumps(record) + "\n").encode())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    yield  # the other plugins first: unittest's sets call.excinfo from the test case's own record of failures
    _say({"test": item.nodeid, "when": call.when, "raised": call.excinfo is not None})


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests are imported: program-style hidden tests leave the disk, the session's folders leave sys.path, and
    writes are sealed, before any test starts."""
    if _HIDE:
        shutil.rmtree(_HIDE, ignore_errors=True)
    if not _SEAL:
        return
    inside = os.path.realpath(_SEAL["session"]) + os.sep
    keep = {os.path.realpath(p) for p in _SEAL.get("keep", [])}  # an open session's repository, last on the path

    def stays(path: str) -> bool:
        return os.path.realpath(path) in keep or not (os.path.realpath(path) + os.sep).startswith(inside)

    sys.path[:] = [p for p in sys.path if p and stays(p)]
    why = landlock.confine([], list(_SEAL.get("writable", [])), limit_reads=False)
    _SEALED.update(sealed=why is None, why=why)
    if why is not None:
        _import_late_modules()


def _import_late_modules() -> None:
    for name in LATE_IMPORTS:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for package in ("_pytest", "pluggy"):
        found = sys.modules.get(package)
        for info in pkgutil.walk_packages(getattr(found, "__path__", []), f"{package}."):
            with contextlib.suppress(Exception):
                importlib.import_module(info.name)


def _loaded_from_here() -> dict[str, str]:
    """Module name -> file, relative to the graded folder, of every module loaded from inside it."""
    found = {}
    for name, module in list(sys.modules.items()):
        if "__bench_standin__" in getattr(module, "__dict__", {}):
            continue  # a stand-in: the code under test's process loaded it, not this one
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.realpath(path).startswith(_ROOT + os.sep):
            found[name] = os.path.relpath(os.path.realpath(path), _ROOT)
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    standin = sys.modules.get(f"{__package__}.standin")
    boundary = getattr(standin, "BOUNDARY", None)
    subject = boundary.report() if boundary is not None else None
    _say({"exit": int(exitstatus), "modules": _loaded_from_here(), "seal": _SEALED, "subject": subject})
