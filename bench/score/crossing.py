"""The values that cross between a library's code under test (its own process, bench/score/subject.py) and the
pytest that judges it (bench/score/standin.py), and the messages that carry them: one JSON document per line.

Plain data crosses as a copy: None, booleans, numbers, strings, bytes, lists, tuples, dicts, sets, Decimal, Fraction,
dates and times, paths, ranges, each by its exact type (a subclass is not plain data). An exception crosses as its
classes (from its own to the standard ones it derives from), its arguments, its message and its plain attributes.
A class, function or module of the standard library crosses by name and stands for that side's own. Anything else
is the sides' business (`other`): the code under test sends a numbered handle of its object, the judge sends back
handles it was given; a value the judge has no way to send (a function or an object of the test's) is CannotCross.
Nothing is ever unpickled or evaluated: decoding builds only the types above, and a malformed message is a
ProtocolError. Standard library only: both sides run in the sandbox image's python3.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
import pathlib
import sys
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import IO, Any

BIG_INT_BITS = 64  # a larger int crosses as hexadecimal text: JSON's decimal digits stop at 4,300 (sys.int_info)
MAX_DEPTH = 40  # nesting beyond this crosses as the sides' own form (a handle), so a cycle ends
LINE_LIMIT = 64 * 1024 * 1024  # bytes in one message; a larger one is not ours

Other = Callable[[Any], Any]  # a side's own form for what is not plain data, and back


class CannotCross(TypeError):
    """A value that the grading boundary cannot carry to the code under test."""


class ProtocolError(RuntimeError):
    """A message from the other side that is not one the bench writes."""


def _floats(value: float) -> Any:
    return value if math.isfinite(value) else {"t": "float", "v": repr(value)}


def _encoders() -> dict[type, Callable[[Any, Callable[[Any], Any]], Any]]:
    return {
        list: lambda v, inner: {"t": "list", "v": [inner(x) for x in v]},
        tuple: lambda v, inner: {"t": "tuple", "v": [inner(x) for x in v]},
        set: lambda v, inner: {"t": "set", "v": [inner(x) for x in v]},
        frozenset: lambda v, inner: {"t": "frozenset", "v": [inner(x) for x in v]},
        dict: lambda v, inner: {"t": "dict", "v": [[inner(k), inner(x)] for k, x in v.items()]},
        bytes: lambda v, _: {"t": "bytes", "v": base64.b64encode(v).decode()},
        bytearray: lambda v, _: {"t": "bytearray", "v": base64.b64encode(v).decode()},
        Decimal: lambda v, _: {"t": "decimal", "v": str(v)},
        Fraction: lambda v, _: {"t": "fraction", "v": [format(v.numerator, "x"), format(v.denominator, "x")]},
        complex: lambda v, _: {"t": "complex", "v": [repr(v.real), repr(v.imag)]},
        datetime.date: lambda v, _: {"t": "date", "v": v.isoformat()},
        datetime.datetime: lambda v, _: {"t": "datetime", "v": v.isoformat()},
        datetime.time: lambda v, _: {"t": "time", "v": v.isoformat()},
        datetime.timedelta: lambda v, _: {"t": "timedelta", "v": [v.days, v.seconds, v.microseconds]},
        pathlib.PosixPath: lambda v, _: {"t": "path", "v": str(v)},
        pathlib.PurePosixPath: lambda v, _: {"t": "purepath", "v": str(v)},
        range: lambda v, _: {"t": "range", "v": [v.start, v.stop, v.step]},
    }


ENCODERS = _encoders()


def encode(value: Any, other: Other, depth: int = 0) -> Any:
    """The JSON-ready form of `value`; `other` gives the form of what is not plain data."""
    kind = type(value)
    if kind is int and value.bit_length() > BIG_INT_BITS:
        return {"t": "int", "v": format(value, "x")}  # hexadecimal: no limit on digits either way
    if kind in (type(None), bool, int, str):
        return value
    if kind is float:
        return _floats(value)
    encoder = ENCODERS.get(kind)
    if encoder is None or depth > MAX_DEPTH:
        return other(value)
    return encoder(value, lambda inner: encode(inner, other, depth + 1))


def _items(data: Any, inner: Callable[[Any], Any]) -> list[Any]:
    if not isinstance(data, list):
        raise ProtocolError("a container's items are not a list")
    return [inner(item) for item in data]


def _decoders() -> dict[str, Callable[[Any, Callable[[Any], Any]], Any]]:
    return {
        "list": _items,
        "tuple": lambda v, inner: tuple(_items(v, inner)),
        "set": lambda v, inner: set(_items(v, inner)),
        "frozenset": lambda v, inner: frozenset(_items(v, inner)),
        "dict": lambda v, inner: {inner(k): inner(x) for k, x in _items(v, lambda pair: pair)},
        "bytes": lambda v, _: base64.b64decode(v, validate=True),
        "bytearray": lambda v, _: bytearray(base64.b64decode(v, validate=True)),
        "decimal": lambda v, _: Decimal(_text(v)),
        "fraction": lambda v, _: Fraction(*(int(_text(part), 16) for part in _pair(v))),
        "complex": lambda v, _: complex(float(_text(v[0])), float(_text(v[1]))),
        "float": lambda v, _: float(_text(v)),
        "int": lambda v, _: int(_text(v), 16),
        "date": lambda v, _: datetime.date.fromisoformat(_text(v)),
        "datetime": lambda v, _: datetime.datetime.fromisoformat(_text(v)),
        "time": lambda v, _: datetime.time.fromisoformat(_text(v)),
        "timedelta": lambda v, _: datetime.timedelta(*_ints(v, 3)),
        "path": lambda v, _: pathlib.PosixPath(_text(v)),
        "purepath": lambda v, _: pathlib.PurePosixPath(_text(v)),
        "range": lambda v, _: range(*_ints(v, 3)),
    }


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ProtocolError("expected a string")
    return value


def _pair(value: Any) -> list[Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise ProtocolError("expected a pair")
    return value


def _ints(value: Any, count: int) -> list[int]:
    if not isinstance(value, list) or len(value) != count or any(type(v) is not int for v in value):
        raise ProtocolError(f"expected {count} integers")
    return value


DECODERS = _decoders()
VALUE_TYPES = (datetime.datetime, datetime.date, datetime.time, datetime.timedelta, Decimal, Fraction)


def exact(value: Any, base: type) -> Any:
    """An object of a subclass of one of VALUE_TYPES as the value of `base` it holds (a copy of the exact type)."""
    data = ENCODERS[base](value, lambda inner: inner)
    return DECODERS[data["t"]](data["v"], lambda inner: inner)


def decode(data: Any, other: Other, depth: int = 0) -> Any:
    """The value `data` stands for; `other` turns the sides' own forms (handles, exceptions) into values."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if depth > MAX_DEPTH + 2 or type(data) is not dict or not isinstance(data.get("t"), str):
        raise ProtocolError("not a value the bench encodes")
    decoder = DECODERS.get(data["t"])
    if decoder is None:
        return other(data)
    return decoder(data.get("v"), lambda inner: decode(inner, other, depth + 1))


def system_name(value: Any) -> tuple[str, str] | None:
    """(module, qualified name) of a module, class or function of the standard library that this process can name
    again; None for anything else (the repository's own, third-party code, objects)."""
    module: Any
    name: Any
    if isinstance(value, type(sys)):
        module, name = value.__name__, ""
    else:
        module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str) or "<" in name:
        return None
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    try:
        return (module, name) if resolve_system(module, name, load=False) is value else None
    except (LookupError, AttributeError):
        return None


def resolve_system(module: str, name: str, load: bool) -> Any:
    """The object a system name stands for here; with `load`, a standard module not yet imported is imported."""
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        raise LookupError(f"{module} is not a module of the standard library")
    found = sys.modules.get(module)
    if found is None and load:
        import importlib

        found = importlib.import_module(module)
    if found is None:
        raise LookupError(f"{module} is not loaded here")
    for part in name.split(".") if name else []:
        found = getattr(found, part)
    return found


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
    stream.flush()


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message, or None when the other side has closed its end."""
    line = stream.readline(LINE_LIMIT + 1)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ProtocolError(f"a message of more than {LINE_LIMIT} bytes")
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"a message that is not JSON: {e}") from None
    if not isinstance(message, dict):
        raise ProtocolError("a message that is not a JSON object")
    return message
