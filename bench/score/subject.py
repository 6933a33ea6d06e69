"""The process that runs a library's code under test during grading: it imports the repository's modules, runs
what the judging pytest asks (bench/score/standin.py) and answers with plain data (bench/score/crossing.py).

The judge starts it, lazily, the first time a test imports a module of the repository: `python -I -B -c BOOT R W`
with two pipes, on which the judge sends this module's source and its companions' first (so nothing of the bench is
read from a folder the process can reach), then one request per line. Before it imports any of the agent's code it
confines itself with Landlock (bench/score/landlock.py): it reads only the system's folders, its copy of the
repository and the session's temporary folder, writes only the last two, and reaches no TCP port nor any process
outside itself (ABI 6). Its first line says whether that worked; the judge notes it when it did not.

Requests: import, getattr, setattr, delattr, call and op (a named operation such as repr, len, eq, next, getitem).
Each may carry the judge's current folder, environment and argv, which the process takes on first, so tests that
change them (monkeypatch.chdir, setenv) reach the code. What the code prints is captured per request and sent back
to be printed in the judge, where capsys sees it. A reply is {"ok": value} or {"raise": exception}.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import operator
import os
import socket
import sys
import types
from typing import IO, Any

from . import crossing, landlock

SYSTEM_FOLDERS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/opt")
# Builtin bases whose value an object of a subclass has (a str subclass is a str): the judge compares that value.
PLAIN_BASES = (bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset)
# The standard library's value types, likewise (a Decimal subclass is a Decimal).
VALUE_BASES = crossing.VALUE_TYPES
OPERATIONS: dict[str, Any] = {
    "repr": repr,
    "str": str,
    "format": format,
    "bytes": bytes,
    "bool": bool,
    "len": len,
    "iter": iter,
    "next": next,
    "reversed": reversed,
    "hash": hash,
    "contains": operator.contains,
    "getitem": operator.getitem,
    "setitem": operator.setitem,
    "delitem": operator.delitem,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "matmul": operator.matmul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": pow,
    "divmod": divmod,
    "neg": operator.neg,
    "pos": operator.pos,
    "abs": abs,
    "invert": operator.invert,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "int": int,
    "float": float,
    "complex": complex,
    "index": operator.index,
    "round": round,
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "dir": dir,
    "enter": lambda o: o.__enter__(),
    "exit": lambda o, *a: o.__exit__(*a),
}


def plain_value(value: Any) -> Any:
    """The builtin value of an object whose class derives from a builtin type, or None."""
    base: Any
    for base in PLAIN_BASES:
        if isinstance(value, base):
            return base(value) if base is not str else str.__str__(value)
    for base in VALUE_BASES:
        if isinstance(value, base):
            return crossing.exact(value, base)
    return None


OPERATIONS["value"] = plain_value


class Handles:
    """The objects the judge holds handles to, numbered in the order they were first sent, kept alive meanwhile."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}
        self.numbers: dict[int, int] = {}
        self.classes: dict[int, dict[str, Any]] = {}  # a class's description, made once: most objects share one

    def number(self, value: Any) -> int:
        found = self.numbers.get(id(value))
        if found is None:
            found = self.numbers[id(value)] = len(self.objects) + 1
            self.objects[found] = value
        return found

    def describe(self, value: Any) -> dict[str, Any]:
        if isinstance(value, BaseException):
            return self.exception(value)
        if isinstance(value, type) and id(value) in self.classes:
            return self.classes[id(value)]
        described: dict[str, Any] = {"t": "handle", "id": self.number(value)}
        system = crossing.system_name(value)
        if system:
            described["system"] = list(system)
        if isinstance(value, types.ModuleType):
            path = getattr(value, "__file__", None)
            described.update(kind="module", name=value.__name__, file=path if isinstance(path, str) else None)
            described["package"] = hasattr(value, "__path__")
        elif isinstance(value, type):
            described.update(kind="class", name=value.__name__, qualname=value.__qualname__, module=value.__module__)
            described["bases"] = [self.describe(base) for base in value.__bases__ if base is not object]
            described["exception"] = issubclass(value, BaseException)
            described["plain"] = issubclass(value, (*PLAIN_BASES, *VALUE_BASES))
            self.classes[id(value)] = described
        else:
            routine = inspect.isroutine(value)
            described.update(
                kind="function" if routine else "object", name=_name(value), type=self.describe(type(value))
            )
        return described

    def exception(self, error: BaseException) -> dict[str, Any]:
        attrs = {k: v for k, v in getattr(error, "__dict__", {}).items() if isinstance(k, str) and k[:2] != "__"}
        return {
            "t": "exc",
            "mro": [self.describe(kind) for kind in type(error).__mro__ if kind not in (object, BaseException)],
            "args": [self.encode(arg) for arg in error.args],
            "message": _text(error),
            "attrs": {k: self.encode(v) for k, v in attrs.items()},
        }

    def encode(self, value: Any) -> Any:
        return crossing.encode(value, self.describe)

    def resolve(self, data: dict[str, Any]) -> Any:
        """A value the judge sent that is not plain data: one of our handles, a system object, an exception."""
        if data["t"] == "ref" and data.get("id") in self.objects:
            return self.objects[data["id"]]
        if data["t"] == "system":
            return crossing.resolve_system(str(data.get("module")), str(data.get("name")), load=True)
        if data["t"] == "exc":
            kinds = [crossing.resolve_system(str(m), str(n), load=True) for m, n in data.get("mro", [])]
            kind = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseException)), Exception)
            args = data.get("args")
            return kind(*(self.decode(arg) for arg in (args if isinstance(args, list) else [])))
        raise crossing.ProtocolError(f"a value the judge cannot send: {str(data)[:100]}")

    def decode(self, data: Any) -> Any:
        return crossing.decode(data, self.resolve)


def _name(value: Any) -> str | None:
    name = getattr(value, "__name__", None) if inspect.isroutine(value) else None
    return name if isinstance(name, str) else None


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:
        return type(error).__name__


def take_context(context: dict[str, Any]) -> None:
    """The judge's folder, environment and argv, when it sent them (it does when they changed)."""
    if isinstance(context.get("env"), dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in context["env"].items()})
    if isinstance(context.get("argv"), list):
        sys.argv[:] = [str(arg) for arg in context["argv"]]
    if isinstance(context.get("cwd"), str):
        os.chdir(context["cwd"])


def perform(handles: Handles, request: dict[str, Any]) -> Any:
    """What one request asks for, run here; its exceptions are the code's."""
    op = request.get("op")
    decode = handles.decode
    if op == "import":
        return importlib.import_module(str(request["name"]))
    target = decode(request.get("target"))
    if op == "getattr":
        return _getattr(target, str(request["name"]))
    if op == "setattr":
        return setattr(target, str(request["name"]), decode(request.get("value")))
    if op == "delattr":
        return delattr(target, str(request["name"]))
    if op == "call":
        kwargs = {str(k): decode(v) for k, v in request.get("kwargs", [])}
        return target(*decode(request.get("args", {"t": "list", "v": []})), **kwargs)
    if op == "op" and request.get("name") in OPERATIONS:
        return OPERATIONS[request["name"]](target, *decode(request.get("args", {"t": "list", "v": []})))
    raise crossing.ProtocolError(f"a request the code's process does not know: {str(request)[:100]}")


def _getattr(target: Any, name: str) -> Any:
    if name == "__all__" and isinstance(target, types.ModuleType) and not hasattr(target, "__all__"):
        return [key for key in dir(target) if not key.startswith("_")]  # what `from module import *` takes
    return getattr(target, name)


def answer(handles: Handles, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one request, with what the code printed meanwhile."""
    streams = sys.stdout, sys.stderr
    captured = {"out": io.BytesIO(), "err": io.BytesIO()}
    out, err = (io.TextIOWrapper(captured[key], "utf-8", "replace", write_through=True) for key in ("out", "err"))
    sys.stdout, sys.stderr = out, err
    try:
        take_context(request.get("context") or {})
        reply: dict[str, Any] = {"ok": handles.encode(perform(handles, request))}
    except BaseException as error:  # the code's, SystemExit and KeyboardInterrupt included: the judge raises them
        reply = {"raise": handles.exception(error)}
    finally:
        sys.stdout, sys.stderr = streams
    for key, stream in (("out", out), ("err", err)):
        stream.flush()
        text = captured[key].getvalue().decode("utf-8", "replace")
        if text:
            reply[key] = text
    return reply


def confine_here(repository: str, temporary: str) -> str | None:
    """Landlock: the system's folders readable, the repository copy and the temporary folder writable."""
    readable = {os.path.realpath(p) for p in (*SYSTEM_FOLDERS, sys.prefix, sys.base_prefix, sys.exec_prefix)}
    readable.add(os.path.dirname(os.path.realpath(sys.executable)))
    session = os.path.dirname(repository)
    readable = {p for p in readable if not os.path.realpath(session).startswith(p.rstrip("/") + "/")}
    return landlock.confine(sorted(readable), [repository, temporary, "/dev"], limit_reads=True, deny_network=True)


def unix_sockets_closed() -> bool:
    """Whether this process can make no Unix socket (the graders' filter, bench/score/socket_filter.py, holds)."""
    try:
        socket.socket(socket.AF_UNIX).close()
    except PermissionError:
        return True
    return False


def serve(reader: IO[bytes], writer: IO[bytes], settings: dict[str, Any]) -> None:
    """Confine, say so, then answer requests until the judge closes its end."""
    repository, temporary = str(settings["repository"]), str(settings["temporary"])
    problem = confine_here(repository, temporary)
    crossing.write_message(
        writer,
        {
            "hello": {
                "confined": problem is None,
                "why": problem,
                "abi": landlock.abi_version(),
                "unix_sockets_closed": unix_sockets_closed(),
            }
        },
    )
    os.chdir(repository)
    sys.path.append(repository)  # last, as the repository always was: it shadows no standard module
    handles = Handles()
    while True:
        request = crossing.read_message(reader)
        if request is None:
            return
        try:
            reply = answer(handles, request)
        except Exception as e:  # an exception no encoding holds: the judge still gets an answer
            reply = {"raise": handles.exception(RuntimeError(f"the answer could not be sent: {type(e).__name__}"))}
        crossing.write_message(writer, reply)
