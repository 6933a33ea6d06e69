"""The judge's stand-ins for the code under test's objects (bench/score/standin.py): classes, functions, modules and
objects whose every use is a request to the process that runs that code (bench/score/subject.py).

What the judge holds is a handle; what it gets back is plain data (bench/score/crossing.py). So no code of the
agent's runs in the judge, and nothing the code returns can compare, hash or print differently for a twin than for
its original: comparing a stand-in object with a plain value (`assert result == "A"`) is decided here, by the
object's builtin value when its class derives from a builtin type or a standard value type (a str subclass, a
namedtuple, a Decimal or date subclass). Any other object is compared by the code's own `__eq__` (and `<` and the
rest), with two stand-ins or with the plain value, as plain pytest compares it: the code decides such a verdict
itself, and the mutant twins of a top-level `== literal` assertion (bench/score/canaries.py) catch an object equal to
everything. The code's exceptions are raised here as
exceptions of the same standard class, or of a stand-in exception class deriving from it, with the same arguments
and message. A test may not subclass a stand-in class (CannotCross): its methods would run here while the code ran
the originals.
"""

from __future__ import annotations

import operator
import types
from typing import Any

from .crossing import CannotCross, encode, system_name

FORWARDED_DUNDERS = frozenset({"__all__", "__version__", "__members__", "__name__", "__qualname__", "__doc__"})


def dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class RemoteError(Exception):
    """An exception of the code under test that no class here can stand for (KeyboardInterrupt, GeneratorExit)."""


class RemoteClass(type):
    """The metaclass of every stand-in class: calling one, or reading its attributes, is a request."""

    _bench_boundary: Any
    _bench_cid: int | None  # the class's handle (an instance's is `_bench_id`)

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> RemoteClass:
        remote = [base for base in bases if isinstance(base, RemoteClass)]
        if "_bench_cid" not in namespace and remote:
            why = f"{name} subclasses a class of the code under test, whose methods run in its own process"
            remote[0]._bench_boundary.refuse(why)
            raise CannotCross(why)
        return super().__new__(mcs, name, bases, namespace)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._bench_boundary.request("call", cls, args=list(args), kwargs=kwargs)

    def __getattr__(cls, name: str) -> Any:
        if dunder(name) and name not in FORWARDED_DUNDERS or vars(cls).get("_bench_cid") is None:
            raise AttributeError(name)
        return cls._bench_boundary.request("getattr", cls, name=name)

    def __setattr__(cls, name: str, value: Any) -> None:
        if name.startswith("_bench_") or dunder(name):
            type.__setattr__(cls, name, value)
        else:
            cls._bench_boundary.request("setattr", cls, name=name, value=value)

    def __iter__(cls) -> Any:  # an Enum class is iterable, and has members by index or name
        return cls._bench_boundary.request("op", cls, name="iter")

    def __len__(cls) -> int:
        return _checked(cls._bench_boundary.request("op", cls, name="len"), int)

    def __bool__(cls) -> bool:
        return True  # a class is true (Python would otherwise ask __len__: `if not cls` in pytest.raises)

    def __getitem__(cls, key: Any) -> Any:
        return cls._bench_boundary.request("op", cls, name="getitem", args=[key])

    def __contains__(cls, item: Any) -> bool:
        return _checked(cls._bench_boundary.request("op", cls, name="contains", args=[item]), bool)

    def __repr__(cls) -> str:
        return f"<class {cls.__qualname__} of the code under test>"


def _checked(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"the code under test answered {type(value).__name__} where Python wants {kind.__name__}")
    return value


def _remote(value: Any) -> bool:
    return isinstance(value, (RemoteObject, RemoteFunction, RemoteModule, RemoteClass))


def _crosses(value: Any) -> bool:
    try:
        encode(value, reference)
    except CannotCross:
        return False
    return True


def _forward(name: str, result: type | None = None, reflected: bool = False) -> Any:
    def method(self: RemoteObject, *args: Any) -> Any:
        if name in ARITHMETIC and not all(map(_crosses, args)):
            return NotImplemented  # an operand of the test's own: its reflected method may take it
        operands = [*args, self] if reflected else [self, *args]
        answer = type(self)._bench_boundary.request("op", operands[0], name=name, args=operands[1:])
        return _checked(answer, result) if result else answer

    return method


def _compare(name: str) -> Any:
    def method(self: RemoteObject, other: Any) -> Any:
        boundary = type(self)._bench_boundary
        if type(self)._bench_plain and not _remote(other):
            return getattr(operator, name)(boundary.request("op", self, name="value"), other)
        if not _remote(other) and not _crosses(other):
            return NotImplemented  # an object of the test's own: its reflected method may take it
        return boundary.request("op", self, name=name, args=[other])  # the code's own comparison, as pytest has it

    return method


ARITHMETIC = (
    "add",
    "sub",
    "mul",
    "matmul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "divmod",
    "lshift",
    "rshift",
    "and",
    "or",
    "xor",
)


VERDICTS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "contains", "bool"})


def decides(name: str, operands: list[Any]) -> bool:
    """Whether the code's answer to this operation on its object may be a test's verdict: a comparison or membership
    it answers itself (not by a builtin value), its truth, or arithmetic handed one of the tests' own values (a
    tolerance check's `result - expected`). docs/fixtures.md, "What the code still decides"."""
    return name in VERDICTS or name in ARITHMETIC and not all(map(_remote, operands))


class RemoteObject(metaclass=RemoteClass):
    """An object of the code under test, by handle; every use of it is a request."""

    __slots__ = ("_bench_id",)
    _bench_id: int
    _bench_plain = False  # whether its class derives from a builtin type, whose value stands for it in comparisons
    _bench_boundary: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_bench_"):
            raise AttributeError(name)
        return type(self)._bench_boundary.request("getattr", self, name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_bench_id":
            object.__setattr__(self, name, value)
        else:
            type(self)._bench_boundary.request("setattr", self, name=name, value=value)

    def __delattr__(self, name: str) -> None:
        type(self)._bench_boundary.request("delattr", self, name=name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return type(self)._bench_boundary.request("call", self, args=list(args), kwargs=kwargs)

    def __hash__(self) -> int:
        if type(self)._bench_plain:
            return hash(type(self)._bench_boundary.request("op", self, name="value"))
        return _checked(type(self)._bench_boundary.request("op", self, name="hash"), int)

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> Any:
        return type(self)._bench_boundary.request("op", self, name="exit", args=[kind, error, None])

    def __deepcopy__(self, memo: Any) -> Any:
        return type(self)._bench_boundary.request("op", self, name="deepcopy")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise CannotCross("an object of the code under test cannot be pickled in the judge")


CHECKED: dict[str, type] = {
    "repr": str,
    "str": str,
    "bytes": bytes,
    "bool": bool,
    "len": int,
    "int": int,
    "float": float,
    "complex": complex,
    "index": int,
    "contains": bool,
    "dir": list,
}
for _name, _kind in CHECKED.items():
    setattr(RemoteObject, f"__{_name}__", _forward(_name, _kind))
for _name in (
    "format",
    "iter",
    "next",
    "reversed",
    "getitem",
    "setitem",
    "delitem",
    "neg",
    "pos",
    "abs",
    "invert",
    "round",
    "enter",
    "copy",
    *ARITHMETIC,
):
    setattr(RemoteObject, f"__{_name}__", _forward(_name))
for _name in ARITHMETIC:
    setattr(RemoteObject, f"__r{_name}__", _forward(_name, reflected=True))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(RemoteObject, f"__{_name}__", _compare(_name))


class RemoteFunction:
    """A function or method of the code under test: calling it is a request."""

    __slots__ = ("_bench_boundary", "_bench_id", "_bench_name")

    def __init__(self, boundary: Any, number: int, name: str | None) -> None:
        self._bench_boundary, self._bench_id, self._bench_name = boundary, number, name or "function"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._bench_boundary.request("call", self, args=list(args), kwargs=kwargs)

    def __getattr__(self, name: str) -> Any:
        if dunder(name) and name not in FORWARDED_DUNDERS:
            raise AttributeError(name)
        return self._bench_boundary.request("getattr", self, name=name)

    def __repr__(self) -> str:
        return f"<function {self._bench_name} of the code under test>"


class RemoteModule(types.ModuleType):
    """A module of the repository, as the tests import it: its attributes are the code's process's."""

    _bench_boundary: Any
    _bench_id: int

    def __getattr__(self, name: str) -> Any:
        if dunder(name) and name not in FORWARDED_DUNDERS or name.startswith("_bench_"):
            raise AttributeError(name)
        return self._bench_boundary.request("getattr", self, name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        if dunder(name) or name.startswith("_bench_") or isinstance(value, RemoteModule):
            super().__setattr__(name, value)  # the import system's own, and submodules, are kept here
        else:
            self._bench_boundary.request("setattr", self, name=name, value=value)

    def __delattr__(self, name: str) -> None:
        self._bench_boundary.request("delattr", self, name=name)

    def __dir__(self) -> list[str]:
        return _checked(self._bench_boundary.request("op", self, name="dir"), list)


def reference(value: Any) -> dict[str, Any]:
    """How the judge sends a value that is not plain data: a stand-in by its handle, a standard object by name, a
    standard exception by its classes and arguments; anything else cannot cross."""
    number = vars(value).get("_bench_cid") if isinstance(value, RemoteClass) else None
    if isinstance(value, RemoteObject | RemoteFunction):
        number = object.__getattribute__(value, "_bench_id")
    elif isinstance(value, RemoteModule):
        number = value.__dict__.get("_bench_id")
    if isinstance(number, int):
        return {"t": "ref", "id": number}
    named = system_name(value)
    if named:
        return {"t": "system", "module": named[0], "name": named[1]}
    if isinstance(value, BaseException) and system_name(type(value)):
        mro = [system_name(kind) for kind in type(value).__mro__]
        return {"t": "exc", "mro": [list(n) for n in mro if n], "args": [encode(a, reference) for a in value.args]}
    raise CannotCross(f"a {type(value).__qualname__} of the tests' own cannot be handed to the code under test")
