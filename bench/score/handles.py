"""The judge's stand-ins made from what the code under test's process sends (bench/score/proxies.py has the
stand-ins themselves): one per handle, so `is` holds across calls; the code's exceptions as exceptions here; and
how the judge's own values go the other way.

An exception of the code is raised in the judge as its nearest standard class that may be raised for it (an
Exception, or SystemExit, of no module that steers the tests' runner: unittest's SkipTest would make a failing test
a skipped one), or as a stand-in class of the code's own exception class deriving from it, with the exception's
arguments, its message (str() gives it) and its plain attributes.
"""

from __future__ import annotations

from typing import Any

from .crossing import VALUE_TYPES, ProtocolError, decode, resolve_system
from .proxies import RemoteClass, RemoteError, RemoteFunction, RemoteObject, dunder

REFUSED_MODULES = ("unittest", "doctest", "pdb", "bdb")
PLAIN_TYPES = (int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset, *VALUE_TYPES)


def _exception_str(self: BaseException) -> str:
    message = self.__dict__.get("_bench_message")
    return message if isinstance(message, str) else Exception.__str__(self)


def allowed_exception(kind: Any) -> bool:
    """A standard exception class the judge may raise for the code: an Exception (or SystemExit) not of the
    modules that steer the tests' runner (unittest's SkipTest would make a test skip instead of fail)."""
    if not isinstance(kind, type) or not issubclass(kind, Exception | SystemExit):
        return False
    return str(getattr(kind, "__module__", "")).partition(".")[0] not in REFUSED_MODULES


class Stand:
    """Makes and keeps the stand-ins of one code process's handles: one per handle, so `is` holds across calls."""

    def __init__(self, boundary: Any) -> None:
        self.boundary = boundary
        self.made: dict[int, Any] = {}
        self.for_system: dict[type, RemoteClass] = {}  # stand-ins for objects of standard classes (an OrderedDict)

    def value(self, data: dict[str, Any]) -> Any:
        """What a handle or exception the code's process sent stands for here."""
        if data.get("t") == "exc":
            return self.exception(data)
        if data.get("t") != "handle" or type(data.get("id")) is not int:
            raise ProtocolError(f"not a handle: {str(data)[:100]}")
        number = data["id"]
        if number not in self.made:
            system = data.get("system")
            if isinstance(system, list) and len(system) == 2:
                try:
                    self.made[number] = resolve_system(str(system[0]), str(system[1]), load=False)
                    return self.made[number]
                except (LookupError, AttributeError):
                    pass  # not loaded here: the code's own stands for it
            self.made[number] = self._make(data, number)
        return self.made[number]

    def _make(self, data: dict[str, Any], number: int) -> Any:
        kind = data.get("kind")
        if kind == "class":
            return self.standin_class(data, number)
        if kind == "module":
            return self.boundary.module(data, number)
        if kind == "function":
            return RemoteFunction(
                self.boundary, number, data.get("name") if isinstance(data.get("name"), str) else None
            )
        cls = self.value(data.get("type") or {})
        if not isinstance(cls, RemoteClass):
            cls = self.system_standin(cls if isinstance(cls, type) else object)
        made: Any = object.__new__(cls)  # type: ignore[arg-type]
        object.__setattr__(made, "_bench_id", number)
        return made

    def system_standin(self, kind: type) -> RemoteClass:
        if kind not in self.for_system:
            plain = issubclass(kind, PLAIN_TYPES)
            data = {"name": kind.__name__, "qualname": kind.__qualname__, "module": kind.__module__, "plain": plain}
            self.for_system[kind] = self.standin_class(data, None)
        return self.for_system[kind]

    def standin_class(self, data: dict[str, Any], number: int | None) -> RemoteClass:
        bases = [self.value(base) for base in data.get("bases") or []]
        remote = tuple(base for base in bases if isinstance(base, RemoteClass))
        exception = bool(data.get("exception"))
        if exception:
            standard = tuple(base for base in bases if allowed_exception(base) and not isinstance(base, RemoteClass))
            chosen = tuple(dict.fromkeys(remote + standard)) or (Exception,)
        else:
            chosen = tuple(base for base in remote if not issubclass(base, BaseException)) or (RemoteObject,)
        namespace: dict[str, Any] = {"__module__": str(data.get("module")), "__qualname__": str(data.get("qualname"))}
        namespace.update(_bench_cid=number, _bench_boundary=self.boundary)
        if exception:
            namespace["__str__"] = _exception_str
        else:
            namespace["__slots__"] = ()
            namespace["_bench_plain"] = bool(data.get("plain")) or any(
                getattr(b, "_bench_plain", False) for b in chosen
            )
        try:
            return RemoteClass(str(data.get("name")), chosen, namespace)
        except TypeError:  # bases whose order the stand-ins cannot repeat: the first one is enough to catch by
            return RemoteClass(str(data.get("name")), chosen[:1], namespace)

    def exception(self, data: dict[str, Any]) -> BaseException:
        kinds = [self.value(entry) for entry in data.get("mro") or [] if isinstance(entry, dict)]
        kind: Any = next((k for k in kinds if isinstance(k, RemoteClass) or allowed_exception(k)), None)
        args = tuple(self.boundary.decode({"t": "list", "v": data.get("args") or []}))
        message = str(data.get("message", ""))
        if kind is None:
            return RemoteError(f"{next((k.__name__ for k in kinds if isinstance(k, type)), 'an exception')}: {message}")
        error: BaseException
        standin = isinstance(kind, RemoteClass)  # made without its __init__: a call would be a request
        try:
            error = BaseException.__new__(kind, *args) if standin else kind(*args)
        except Exception:
            error = BaseException.__new__(kind)
        error.args = args
        if standin:
            error.__dict__["_bench_message"] = message
            attrs: Any = data.get("attrs") if isinstance(data.get("attrs"), dict) else {}
            for name, value in attrs.items():
                if isinstance(name, str) and not dunder(name):
                    error.__dict__[name] = self.boundary.decode(value)
        return error


def decode_reply(stand: Stand, data: Any) -> Any:
    try:
        return decode(data, stand.value)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, ZeroDivisionError, RecursionError) as e:
        raise ProtocolError(f"a malformed value from the code's process: {type(e).__name__}: {e}") from None
