from fractions import Fraction

from ratios import Ratio


def test_halves_make_a_whole():
    assert Ratio(1, 2) + Ratio(1, 2) == Ratio(1, 1)


def test_a_third_within_a_thousandth():
    assert abs(Ratio(1, 3) - Fraction(333, 1000)) < Fraction(1, 1000)


def test_between_holds_its_ends():
    assert Ratio(5, 1) in Ratio.between(1, 5)


def test_equal_to_a_fraction():
    assert Ratio(2, 4) == Fraction(1, 2)
