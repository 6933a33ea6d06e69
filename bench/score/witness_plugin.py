"""The bench's witness inside a grading pytest run, loaded with `-p bench_witness` from a copy of this file in the
grading folder, before any test module (so before any code of the agent's) is imported.

It reports on a pipe that the grading supervisor (bench/score/supervisor.py) opened and reads, one JSON line per
record: for every phase of every test, whether it raised, as seen after every other plugin made its report (a
subtest's phase counts too: any raise makes the test a failure); at the end, pytest's exit status and the modules
the session loaded from the graded folder. The pipe's number is handed over in the environment, which this module
empties at once, and moved to a random descriptor among decoy pipes of the same kind; the process is made
non-dumpable, so that no other process (a test's child) can open its descriptors or read its memory. Code of the
agent's that runs inside this process can still reach all of it: the canaries (bench/score/canaries.py) are the
check on that. Standard library and pytest only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import random
import shutil
import sys
from typing import Any

import pytest

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
_ROOT = os.path.realpath(os.getcwd())


def _say(record: dict[str, Any]) -> None:
    if _CHANNEL is not None:
        with contextlib.suppress(OSError):
            _write(_CHANNEL, (json.dumps(record) + "\n").encode())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    yield  # the other plugins first: unittest's sets call.excinfo from the test case's own record of failures
    _say({"test": item.nodeid, "when": call.when, "raised": call.excinfo is not None})


def pytest_collection_finish(session: pytest.Session) -> None:
    """Program-style hidden tests are imported now: their files leave the disk before any test starts a child."""
    if _HIDE:
        shutil.rmtree(_HIDE, ignore_errors=True)


def _loaded_from_here() -> dict[str, str]:
    """Module name -> file, relative to the graded folder, of every module loaded from inside it."""
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and os.path.realpath(path).startswith(_ROOT + os.sep):
            found[name] = os.path.relpath(os.path.realpath(path), _ROOT)
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _say({"exit": int(exitstatus), "modules": _loaded_from_here()})
