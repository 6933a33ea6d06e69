import cmath
import math

from circle import area


def test_the_unit_circle():
    assert cmath.isclose(area(1), math.pi)


def test_no_radius_no_area():
    assert area(0) == 0
