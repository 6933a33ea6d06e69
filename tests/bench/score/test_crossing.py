"""The wire format between the code under test's process and the judge (bench/score/crossing.py): plain data
survives the trip exactly, by its exact type; anything malformed is a ProtocolError, never a value."""

from __future__ import annotations

import io
import json
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from pathlib import PosixPath, PurePosixPath
from typing import Any

import pytest

from bench.score import crossing

PLAIN = [
    None,
    True,
    0,
    -(10**30),
    1.5,
    float("inf"),
    "tëxt",
    b"\x00\xff",
    bytearray(b"ab"),
    [1, [2, (3,)]],
    (Decimal("4.50"), Fraction(1, 3)),
    {"a": {1, 2}, (1, 2): frozenset({"x"})},
    complex(1, -2),
    date(2024, 2, 29),
    datetime(2024, 5, 1, 12, 30, tzinfo=timezone(timedelta(hours=2))),
    time(7, 5),
    timedelta(days=-1, seconds=5),
    PosixPath("/tmp/x"),
    PurePosixPath("a/b"),
    range(1, 10, 3),
]


def refuse(value: Any) -> Any:
    raise crossing.CannotCross(type(value).__name__)


def test_plain_data_crosses_exactly() -> None:
    for value in PLAIN:
        wire = json.loads(json.dumps(crossing.encode(value, refuse)))
        back = crossing.decode(wire, refuse)
        assert (back, type(back)) == (value, type(value))


def test_a_nan_crosses_as_a_nan() -> None:
    back = crossing.decode(json.loads(json.dumps(crossing.encode(float("nan"), refuse))), refuse)
    assert back != back


def test_what_is_not_plain_data_goes_to_the_sides_own_form() -> None:
    class Mine(str):
        pass

    seen: list[Any] = []
    encoded = crossing.encode([Mine("x"), len], lambda value: seen.append(value) or {"t": "handle", "id": len(seen)})
    assert seen == [Mine("x"), len] and encoded["v"][1] == {"t": "handle", "id": 2}


@pytest.mark.parametrize(
    "data",
    [
        {"t": "list", "v": 3},
        {"t": "decimal", "v": 4},
        {"t": "fraction", "v": [1]},
        {"t": "bytes", "v": "%%"},
        {"v": 1},
        [1, 2],
        {"t": "range", "v": [1, 2, "3"]},
    ],
)
def test_a_malformed_value_is_refused(data: Any) -> None:
    with pytest.raises((crossing.ProtocolError, ValueError, TypeError)):
        crossing.decode(data, refuse)


def test_the_decoder_hands_unknown_tags_to_the_side_and_builds_nothing_else() -> None:
    handed: list[Any] = []
    crossing.decode({"t": "pickle", "v": "gASVAAAAAAAAAAA="}, lambda data: handed.append(data))
    assert handed == [{"t": "pickle", "v": "gASVAAAAAAAAAAA="}]


def test_messages_are_json_lines_up_to_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.BytesIO()
    crossing.write_message(stream, {"op": "call"})
    stream.seek(0)
    assert crossing.read_message(stream) == {"op": "call"} and crossing.read_message(stream) is None
    monkeypatch.setattr(crossing, "LINE_LIMIT", 10)
    with pytest.raises(crossing.ProtocolError, match="more than 10 bytes"):
        crossing.read_message(io.BytesIO(b'{"op": "0123456789"}\n'))
    with pytest.raises(crossing.ProtocolError, match="not a JSON object"):
        crossing.read_message(io.BytesIO(b"[1]\n"))


def test_standard_objects_cross_by_name_and_nothing_else_does() -> None:
    assert crossing.system_name(Decimal) == ("decimal", "Decimal")
    assert crossing.system_name(len) == ("builtins", "len")
    assert crossing.system_name(json) == ("json", "")
    assert crossing.system_name(refuse) is None  # a function of this test module's
    assert crossing.system_name(pytest) is None  # installed, not of the standard library
    with pytest.raises(LookupError):
        crossing.resolve_system("pytest", "fail", load=True)
