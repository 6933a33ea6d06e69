"""Library-style grading's judge: the pytest that runs the hidden tests never imports the repository. Each of its
modules, as the tests import it, is a stand-in (bench/score/proxies.py) whose every use is a request to one process
of its own per session that runs the code (bench/score/subject.py), started the first time a test imports one.

Installed by the grading session's start-up (bench/score/supervisor.py) before pytest: an import finder, first on
sys.meta_path, takes the names the repository would give a module (its top-level modules and packages, and their
submodules) that neither the system's path nor the tests' own folder provides, just as a repository last on
sys.path would resolve. Each request carries what changed of the judge's folder, environment (without pytest's
PYTEST_CURRENT_TEST, which names the test) and argv (once a test changes it), so monkeypatch.chdir, setenv and
setattr(sys, "argv", ...) reach the code; what the code prints comes back and is printed here, where capsys reads
it. What the tests hand the code must be plain data or the code's own objects: a value of theirs that cannot cross
(a function, an object of their own class) is refused with CannotCross, and the test is named in the session's
report (bench/score/witness_plugin.py).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from . import crossing
from .handles import Stand, decode_reply
from .proxies import RemoteModule, decides, reference

SETTINGS_VARIABLE = "BENCH_STANDIN"
COMPANIONS = ("crossing", "landlock", "subject")  # the sources the code's process runs, sent on its pipe
HIDDEN_FROM_THE_CODE = frozenset({"PYTEST_CURRENT_TEST"})
CHILD_BOOT = (
    "import json, os, sys, types\n"
    "reader, writer = os.fdopen(int(sys.argv[1]), 'rb'), os.fdopen(int(sys.argv[2]), 'wb')\n"
    "start = json.loads(reader.readline())\n"
    "package = types.ModuleType('bench_grading')\n"
    "package.__path__ = []\n"
    "sys.modules['bench_grading'] = package\n"
    "for name in ('crossing', 'landlock', 'subject'):\n"
    "    module = types.ModuleType('bench_grading.' + name)\n"
    "    module.__package__ = 'bench_grading'\n"
    "    sys.modules[module.__name__] = module\n"
    "    setattr(package, name, module)\n"
    "    exec(compile(start['sources'][name], 'bench_grading/' + name + '.py', 'exec'), module.__dict__)\n"
    "sys.modules['bench_grading.subject'].serve(reader, writer, start['settings'])\n"
)


class CodeGone(RuntimeError):
    """The process that ran the code under test has ended (the code called os._exit, or crashed)."""


def current_test() -> str:
    """The test being run (its id), or "collection" while the test modules are imported."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rpartition(" ")[0] or "collection"


class Boundary:
    """The judge's end of the code's process: starts it, sends requests, turns replies into values or exceptions."""

    def __init__(self, settings: dict[str, Any], sources: dict[str, str]) -> None:
        self.settings, self.sources = settings, sources
        self.stand = Stand(self)
        self.process: subprocess.Popen[bytes] | None = None
        self.writer: Any = None
        self.reader: Any = None
        self.sent: dict[str, Any] = {"argv": list(sys.argv)}  # pytest's own argv is not the code's business
        self.environment: dict[Any, Any] = {}
        self.hello: dict[str, Any] = {}
        self.refused: dict[str, list[str]] = {}
        self.decided: dict[str, list[str]] = {}  # test -> the operations whose answer the code gave (proxies.decides)
        self.gone: str | None = None
        self.output = os.dup(2)  # the session's own stderr, before pytest captures it: the process's fds 1 and 2
        self.turn = threading.Lock()  # one request at a time on the pipe, whatever threads the tests start

    def request(self, op: str, target: Any = None, **fields: Any) -> Any:
        if op == "op" and decides(fields["name"], [target, *fields.get("args", [])]):
            asked = self.decided.setdefault(current_test(), [])
            asked += [] if fields["name"] in asked else [fields["name"]]
        message: dict[str, Any] = {"op": op}
        if target is not None:
            message["target"] = self.encode(target)
        for key, value in fields.items():
            if key == "kwargs":
                message[key] = [[str(k), self.encode(v)] for k, v in value.items()]
            else:
                message[key] = value if key == "name" else self.encode(value)
        reply = self.exchange(message)
        for key, stream in (("out", sys.stdout), ("err", sys.stderr)):
            if isinstance(reply.get(key), str):
                stream.write(reply[key])
        if isinstance(reply.get("raise"), dict):
            raise self.stand.exception(reply["raise"]) from None
        return decode_reply(self.stand, reply.get("ok"))

    def encode(self, value: Any) -> Any:
        try:
            return crossing.encode(value, reference)
        except crossing.CannotCross as e:
            self.refuse(str(e))
            raise

    def refuse(self, why: str) -> None:
        """Note that the current test (or the collection) handed the code what cannot cross: plain pytest alone
        grades it (bench/score/verdict.py)."""
        self.refused.setdefault(current_test(), []).append(why)

    def decode(self, data: Any) -> Any:
        return decode_reply(self.stand, data)

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        with self.turn:
            return self._exchange(message)

    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.gone:
            raise CodeGone(self.gone)
        if self.process is None:
            self.start()
        if not self.hello:
            self.greeted()
        changed = self.context()
        if changed:
            message["context"] = changed
        try:
            crossing.write_message(self.writer, message)
            reply = crossing.read_message(self.reader)
            if reply is not None and "ok" not in reply and "raise" not in reply:
                raise crossing.ProtocolError(f"an answer of neither value nor exception: {str(reply)[:100]}")
        except (OSError, crossing.ProtocolError) as e:
            reply, why = None, f"{type(e).__name__}: {e}"
        else:
            why = "it closed its pipe"
        if reply is None:
            assert self.process is not None
            self.process.kill()
            self.gone = f"the code under test's process ended (exit status {self.process.wait()}; {why})"
            raise CodeGone(self.gone)
        return reply

    def context(self) -> dict[str, Any]:
        now: dict[str, Any] = {"cwd": os.getcwd(), "argv": list(sys.argv)}
        raw = getattr(os.environ, "_data", None)  # its bytes, compared at C speed: decoding every request cost most
        snapshot = dict(raw) if isinstance(raw, dict) else dict(os.environ)
        snapshot.pop(b"PYTEST_CURRENT_TEST", None)
        if snapshot != self.environment:
            self.environment = snapshot
            now["env"] = {k: v for k, v in os.environ.items() if k not in HIDDEN_FROM_THE_CODE}
        changed = {key: value for key, value in now.items() if self.sent.get(key) != value}
        self.sent.update(changed)
        return changed

    def start(self) -> None:
        """The code's process, started with the session (its start-up overlaps pytest's), confined before it imports
        anything of the agent's; its first line, read at the first request, says how."""
        to_code, from_judge = os.pipe()
        from_code, to_judge = os.pipe()
        command = [sys.executable, "-I", "-B", "-c", CHILD_BOOT, str(to_code), str(to_judge)]
        env = {k: v for k, v in os.environ.items() if k not in HIDDEN_FROM_THE_CODE}
        self.process = subprocess.Popen(
            command,
            cwd=self.settings["repository"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.output,
            stderr=self.output,
            pass_fds=(to_code, to_judge),
        )
        os.close(to_code)
        os.close(to_judge)
        self.writer, self.reader = os.fdopen(from_judge, "wb"), os.fdopen(from_code, "rb")
        crossing.write_message(self.writer, {"sources": self.sources, "settings": self.settings})

    def greeted(self) -> None:
        try:
            first = crossing.read_message(self.reader)
        except (OSError, crossing.ProtocolError):
            first = None
        if first is None or not isinstance(first.get("hello"), dict):
            self.gone = "the code under test's process did not start"
            raise CodeGone(self.gone)
        self.hello = first["hello"]

    def module(self, data: dict[str, Any], number: int) -> RemoteModule:
        module = RemoteModule(str(data.get("name")))
        module.__dict__.update(_bench_boundary=self, _bench_id=number, __bench_standin__=True)
        if isinstance(data.get("file"), str):
            module.__dict__["__file__"] = data["file"]
        if data.get("package"):
            module.__dict__["__path__"] = []
        return module

    def report(self) -> dict[str, Any]:
        """For the witness's last record: whether the code's process ran, confined or why not, what was refused."""
        started = bool(self.hello)
        return {
            "started": started,
            "confined": self.hello.get("confined"),
            "why": self.hello.get("why"),
            "abi": self.hello.get("abi"),
            "unix_sockets_closed": self.hello.get("unix_sockets_closed"),
            "refused": self.refused,
            "decided": self.decided,
            "gone": self.gone,
        }


class Loader(importlib.abc.Loader):
    def __init__(self, boundary: Boundary) -> None:
        self.boundary = boundary

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        module = self.boundary.request("import", name=spec.name)
        if not isinstance(module, RemoteModule):
            raise ImportError(f"the code under test's {spec.name} is not one of its modules", name=spec.name)
        return module

    def exec_module(self, module: Any) -> None:
        """Nothing to run here: the code's process ran the module."""


class Finder(importlib.abc.MetaPathFinder):
    """Stand-ins for the modules the repository would give, where the system's path and the tests' folder do not."""

    def __init__(self, boundary: Boundary, system_path: list[str]) -> None:
        self.boundary, self.system_path = boundary, system_path
        self.repository = module_names(Path(boundary.settings["repository"]), deep=False)
        self.tests = module_names(Path(boundary.settings["tests"]), deep=True)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        parent = name.rpartition(".")[0]
        if parent and not isinstance(sys.modules.get(parent), RemoteModule):
            return None
        if not parent and (name not in self.repository or name in self.tests):
            return None
        if not parent and system_module(name, self.system_path):
            return None  # the standard library and installed packages come first, as for a repository last on the path
        loader = Loader(self.boundary)
        return importlib.util.spec_from_loader(name, loader, origin="the code under test", is_package=True)


def system_module(name: str, system_path: list[str]) -> bool:
    """Whether the interpreter gives module `name` before a repository last on sys.path would: built into it (cmath
    in Debian's python3), frozen, or a file on the system's path."""
    if name in sys.builtin_module_names or importlib.machinery.FrozenImporter.find_spec(name) is not None:
        return True
    return importlib.machinery.PathFinder.find_spec(name, system_path) is not None


def module_names(folder: Path, deep: bool) -> set[str]:
    """Names a folder gives modules: its .py files and its folders (a package, or a namespace); `deep`: every
    folder's, as pytest puts each test file's folder on the path."""
    names: set[str] = set()
    for entry in folder.rglob("*") if deep else folder.iterdir():
        if entry.name.startswith("."):
            continue
        if entry.suffix == ".py" and entry.is_file():
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier():
            names.add(entry.name)
    return names


BOUNDARY: Boundary | None = None


def install() -> Boundary:
    """The finder first on sys.meta_path, from the settings the session's start-up left in the environment."""
    global BOUNDARY
    settings = json.loads(os.environ.pop(SETTINGS_VARIABLE))
    here = Path(__file__).parent
    sources = {name: (here / f"{name}.py").read_text(encoding="utf-8") for name in COMPANIONS}
    BOUNDARY = Boundary(settings, sources)
    system_path = [p for p in sys.path if os.path.realpath(p) != os.path.realpath(here.parent)]
    sys.meta_path.insert(0, Finder(BOUNDARY, system_path))
    BOUNDARY.start()
    return BOUNDARY
