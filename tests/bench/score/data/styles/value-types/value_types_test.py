import datetime
from decimal import Decimal
from fractions import Fraction

from value_types import next_day, price, ratio


def test_price_rounds_to_cents():
    assert price("4.505") == Decimal("4.51")


def test_price_keeps_cents():
    assert price("3.10") == Decimal("3.10")


def test_next_day_crosses_a_month():
    assert next_day(datetime.date(2024, 1, 31)) == datetime.date(2024, 2, 1)


def test_next_day_in_a_set():
    assert next_day(datetime.date(2023, 12, 31)) in {datetime.date(2024, 1, 1)}


def test_ratio_in_lowest_terms():
    assert ratio(2, 6) == Fraction(1, 3)


def test_ratio_sorts_with_fractions():
    assert sorted([Fraction(1, 2), ratio(1, 4)]) == [Fraction(1, 4), Fraction(1, 2)]
