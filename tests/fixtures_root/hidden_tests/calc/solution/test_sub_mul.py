from calc import mul, sub


def test_sub_of_integers():
    assert sub(5, 3) == 2


def test_sub_of_floats():
    assert sub(1.5, 0.5) == 1.0


def test_sub_with_a_negative_result():
    assert sub(2, 5) == -3


def test_mul_by_a_positive_number():
    assert mul(4, 3) == 12


def test_mul_by_a_negative_number():
    assert mul(-2, 3) == -6


def test_mul_by_zero():
    assert mul(0, 7) == 0
