from fractions import Fraction


class Ratio:
    def __init__(self, numerator, denominator=1):
        self.value = Fraction(numerator, denominator)

    def __add__(self, other):
        return Ratio(self.value + other.value)

    def __sub__(self, other):
        other = other.value if isinstance(other, Ratio) else Fraction(other)
        return Ratio(self.value - other)

    def __abs__(self):
        return abs(self.value)

    def __eq__(self, other):
        return self.value == (other.value if isinstance(other, Ratio) else other)

    def __hash__(self):
        return hash(self.value)

    @classmethod
    def between(cls, low, high):
        return {cls(n) for n in range(low, high + 1)}
