import math


def area(radius):
    """The area of a circle of this radius."""
    return math.pi * radius * radius
